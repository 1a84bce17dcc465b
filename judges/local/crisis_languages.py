"""The crisis screen in other languages: the core crisis concepts in each language's own words
(crisis_languages.yaml), read before the "English only" notice, so a crisis in any language gets
the crisis reply. High precision by construction (first-person phrases of intent, not topics);
every language's examples are tested."""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from pathlib import Path

import yaml
from pydantic import Field, field_validator

from app.core.records import Record

DATA = Path(__file__).with_name("crisis_languages.yaml")


class Examples(Record):
    crisis: list[str] = Field(min_length=1)
    safe: list[str] = Field(min_length=1)


class Language(Record):
    patterns: list[str] = Field(min_length=1)
    not_: list[str] = Field(default_factory=list, alias="not")
    examples: Examples

    @field_validator("patterns", "not_")
    @classmethod
    def _compiles(cls, items: list[str]) -> list[str]:
        for item in items:
            re.compile(item)
        return items


class LanguagesFile(Record):
    languages: dict[str, Language]


@cache
def languages() -> dict[str, Language]:
    return LanguagesFile.model_validate(yaml.safe_load(DATA.read_text(encoding="utf-8"))).languages


@cache
def _compiled() -> list[tuple[str, re.Pattern[str], re.Pattern[str] | None]]:
    return [(code, re.compile("|".join(f"(?:{p})" for p in lang.patterns), re.IGNORECASE),
             re.compile("|".join(f"(?:{p})" for p in lang.not_), re.IGNORECASE) if lang.not_ else None)
            for code, lang in languages().items()]


def find(text: str) -> tuple[str, str] | None:
    """(language code, the words that matched) for a crisis phrase in any language, else None."""
    text = unicodedata.normalize("NFKC", text).lower()
    for code, pattern, figures in _compiled():
        for match in pattern.finditer(text):
            if figures is None or not any(f.start() <= match.start() < f.end()
                                          for f in figures.finditer(text)):
                return code, match.group(0)
    return None
