"""Patterns and thresholds of the draft checks, loaded from `patterns.yaml`.

Keeping them as data means a reviewer can read (and a deployment can extend) what tier 0 looks
for without reading code. A regex may use `{name}` to insert a shared word list
(app/core/lexicon.yaml) as an alternation, e.g. `{medicines}`.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError, model_validator

from app.core.datafiles import parse_yaml
from app.core.errors import ConfigError
from app.core.lexicon import expand, unknown_names
from app.core.records import Record

PATTERNS_FILE = Path(__file__).with_name("patterns.yaml")


Regexes = list[str]


class Thresholds(Record):
    grounding: dict[str, float]
    uncited: dict[str, float]
    role_scope: dict[str, float]
    leakage: dict[str, float]


class PatternsFile(Record):
    """The schema of patterns.yaml: a misspelt section or key, a regex that does not compile or a
    `{name}` with no word list is an error at start-up, naming the place, not a crashed check."""

    thresholds: Thresholds
    grounding: dict[Literal["generic_words"], list[str]]
    uncited: dict[Literal["specific", "allowed_prototypes"], list[str]]
    verification: dict[Literal["topics"], Regexes]
    medication: dict[Literal["advice", "negated_before", "prescriber_subject", "descriptive_after",
                             "medicine_context"], Regexes | str]
    transparency: dict[Literal["persona_claim", "overclaim", "negated_before"], Regexes | str]
    leakage: dict[Literal["injection", "compliance", "refusal", "disclosure"], Regexes | str]
    role_scope: dict[Literal["persona", "diagnosis", "therapy", "speculation", "negated_before"], Regexes | str]
    kinds: dict[Literal["marker", "meta", "empathy", "referral_verbs", "pronoun_referral"], Regexes]
    crisis: CrisisPatterns

    @model_validator(mode="after")
    def _regexes_compile(self) -> PatternsFile:
        problems = []
        for section, key, pattern in self._regexes():
            if unknown := unknown_names(pattern):
                problems.append(f"{section}.{key}: no word list named {unknown} in app/core/lexicon.yaml")
                continue
            try:
                re.compile(expand(pattern))
            except re.error as error:
                problems.append(f"{section}.{key}: bad regex {pattern!r}: {error}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _regexes(self):
        for section in ("verification", "medication", "transparency", "leakage", "role_scope", "kinds"):
            for key, value in getattr(self, section).items():
                for pattern in [value] if isinstance(value, str) else value:
                    yield section, key, pattern
        crisis = self.crisis
        for key in ("draft_response", "draft_minimising", "draft_encouraging"):
            for pattern in getattr(crisis, key):
                yield "crisis", key, pattern


class CrisisPatterns(Record):
    draft_response: Regexes
    draft_minimising: Regexes
    draft_encouraging: Regexes


PatternsFile.model_rebuild()


@cache
def data() -> dict[str, Any]:
    """patterns.yaml, validated. Raises ConfigError naming the file and every problem."""
    try:
        loaded = parse_yaml(PATTERNS_FILE.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{PATTERNS_FILE}: cannot load the local-check patterns: {error}") from error
    try:
        PatternsFile.model_validate(loaded)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(file)'}: {e['msg']}"
                             for e in error.errors())
        raise ConfigError(f"{PATTERNS_FILE}: {problems}") from error
    return loaded


def section(name: str) -> dict[str, Any]:
    try:
        return data()[name]
    except KeyError:
        raise ConfigError(f"{PATTERNS_FILE}: no section {name!r}") from None


def threshold(check: str, name: str) -> float:
    try:
        return float(data()["thresholds"][check][name])
    except KeyError:
        raise ConfigError(f"{PATTERNS_FILE}: no threshold thresholds.{check}.{name}") from None


@cache
def regex(section_name: str, key: str) -> re.Pattern[str]:
    """One compiled, case-insensitive alternation of the patterns listed at section.key."""
    items = section(section_name).get(key)
    if not items:
        raise ConfigError(f"{PATTERNS_FILE}: no patterns at {section_name}.{key}")
    parts = [f"(?:{expand(p)})" for p in items]
    try:
        return re.compile("|".join(parts), re.IGNORECASE)
    except re.error as error:
        raise ConfigError(f"{PATTERNS_FILE}: bad regex at {section_name}.{key}: {error}") from error


def first_match(section_name: str, key: str, text: str) -> str | None:
    match = regex(section_name, key).search(text)
    return match.group(0) if match else None
