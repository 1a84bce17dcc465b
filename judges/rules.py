"""The rules file, read by both the chatbot's prompt and the judges: one place for the rules."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml
from pydantic import ValidationError

from app.core.datafiles import parse_yaml
from app.core.errors import ConfigError
from app.core.profile import Profile
from app.core.records import Record

RULES_FILE = Path(__file__).with_name("rules.yaml")


class Rule(Record):
    id: str
    title: str
    text: str
    severity: str


class RuleBook(Record):
    role: str
    rules: list[Rule]

    def get(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(f"no rule {rule_id!r} in {RULES_FILE.name}; known: {[r.id for r in self.rules]}")

    def worded(self, profile: Profile | None = None, example_id: str = "S1") -> RuleBook:
        """The rules with their placeholders filled: the deployment's `profile` (generic if None),
        a citation shown with `example_id`."""
        wording = {**(profile or Profile()).wording(), "example_id": example_id}
        return self.model_copy(update={
            "role": self.role.format(**wording),
            "rules": [r.model_copy(update={"text": r.text.format(**wording)}) for r in self.rules]})

    def as_prompt(self, profile: Profile | None = None, example_id: str = "S1") -> str:
        """The rules as the chatbot reads them (without the judges' severity policies)."""
        book = self.worded(profile, example_id)
        lines = [book.role.strip(), "", "Rules:"]
        lines += [f"{n}. {rule.title}. {rule.text.strip()}" for n, rule in enumerate(book.rules, 1)]
        return "\n".join(lines)


@cache
def load_rules(path: Path = RULES_FILE) -> RuleBook:
    try:
        return RuleBook.model_validate(parse_yaml(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError, ValidationError) as error:
        raise ConfigError(f"{path}: cannot load the rules: {error}") from error
