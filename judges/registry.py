"""Judge definitions as data: one YAML file per judge in `definitions/`, validated at load time."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, field_validator

from app.core.datafiles import parse_yaml
from app.core.errors import ConfigError
from app.core.lexicon import words_regex
from app.core.records import Record, Verdict
from app.core.text import citations_in
from judges.local.checks import LOCAL_CHECKS
from judges.rules import load_rules
from judges.schema import DraftContext

DEFINITIONS_DIR = Path(__file__).with_name("definitions")
AppliesWhen = Literal["always", "has_draft", "cites_sources", "mentions_medicine", "user_message"]

class Severity(Record):
    max_verdict: Verdict = "reject"  # the strongest verdict this judge may give


class JudgeDefinition(Record):
    name: str
    description: str
    rules: list[str] = Field(min_length=1)
    applies_when: AppliesWhen
    local_checks: list[str] = Field(default_factory=list)
    screening_prompt: str
    confirmation_prompt: str
    severity: Severity = Severity()

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, rules: list[str]) -> list[str]:
        known = {r.id for r in load_rules().rules}
        unknown = [r for r in rules if r not in known]
        if unknown:
            raise ValueError(f"unknown rule ids {unknown}; rules.yaml defines {sorted(known)}")
        return rules

    @field_validator("local_checks")
    @classmethod
    def _known_checks(cls, checks: list[str]) -> list[str]:
        unknown = [c for c in checks if c not in LOCAL_CHECKS]
        if unknown:
            raise ValueError(f"unknown local checks {unknown}; available: {sorted(LOCAL_CHECKS)}")
        return checks

    def applies_to(self, ctx: DraftContext) -> bool:
        if self.applies_when == "always":
            return True
        if self.applies_when == "user_message":
            return ctx.draft is None
        if ctx.draft is None:
            return False
        if self.applies_when == "cites_sources":
            return bool(citations_in(ctx.draft))
        if self.applies_when == "mentions_medicine":
            # Generous on purpose: a judge that runs when it need not costs milliseconds.
            mentions = [words_regex("medicines"), words_regex("medicine_words")]
            return any(p.search(text) for p in mentions for text in (ctx.draft, ctx.user))
        return True  # has_draft


@cache
def load_judges(directory: Path = DEFINITIONS_DIR) -> tuple[JudgeDefinition, ...]:
    judges, problems = [], []
    for path in sorted(directory.glob("*.yaml")):
        try:
            judges.append(JudgeDefinition.model_validate(parse_yaml(path.read_text(encoding="utf-8"))))
        except yaml.YAMLError as error:
            problems.append(f"{path}: not valid YAML: {error}")
        except ValidationError as error:
            for e in error.errors():
                field = ".".join(str(p) for p in e["loc"]) or "(file)"
                problems.append(f"{path}: field '{field}': {e['msg']}")
    if problems:
        raise ConfigError("Invalid judge definitions:\n" + "\n".join(problems))
    names = [j.name for j in judges]
    if len(set(names)) != len(names):
        raise ConfigError(f"{directory}: duplicate judge names in {names}")
    if not judges:
        raise ConfigError(f"{directory}: no judge definitions (*.yaml) found")
    return tuple(judges)
