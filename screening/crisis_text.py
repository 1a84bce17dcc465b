"""A message as the input screen reads it, before any model: lower case, slang and one-letter
misspellings rewritten, idioms removed, marked or read as what they say (`normalise`, by the
rules in text_rules.yaml), and the high-precision English crisis patterns (crisis_patterns.yaml:
each with an id and tested examples, `pattern_hit`). It imports no model, so the screen's models
build on it."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from app.core.datafiles import parse_yaml
from app.core.lexicon import expand
from app.core.records import Record
from app.core.spelling import Speller
from app.core.text import split_sentences

PATTERNS_FILE = Path(__file__).with_name("crisis_patterns.yaml")
RULES_FILE = Path(__file__).with_name("text_rules.yaml")
IDIOM_MARK = " figureofspeech "  # what the learned layer reads where an idiom was


class CrisisPattern(Record):
    id: str = Field(pattern=r"^[a-z_]+$")
    pattern: str
    crisis: list[str] = Field(min_length=1)
    safe: list[str] = Field(min_length=1)


class CrisisPatternsFile(Record):
    patterns: list[CrisisPattern]


class TextRules(Record):
    normalise: dict[str, str]  # slang and shorthand: what each is rewritten to (whole words)
    fuzzy_targets: list[str]  # a word one edit away from one of these is read as it
    # Figures of speech that sound violent but are not (regexes), each with what it says (a
    # replacement: \1 is its first group).
    idioms: dict[str, str]

    @field_validator("idioms")
    @classmethod
    def _compiles(cls, idioms: dict[str, str]) -> dict[str, str]:
        for idiom, says in idioms.items():
            try:
                re.compile(idiom).sub(says, "")
            except re.error as error:
                raise ValueError(f"bad regex {idiom!r} or replacement {says!r}: {error}") from error
        return idioms


@cache
def text_rules() -> TextRules:
    return TextRules.model_validate(parse_yaml(RULES_FILE.read_text(encoding="utf-8")))


@cache
def _idioms() -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile(idiom, re.IGNORECASE), f" {says} ") for idiom, says in text_rules().idioms.items()]


@cache
def crisis_patterns() -> list[tuple[CrisisPattern, re.Pattern[str]]]:
    data = CrisisPatternsFile.model_validate(parse_yaml(PATTERNS_FILE.read_text(encoding="utf-8")))
    return [(p, re.compile(expand(p.pattern), re.IGNORECASE)) for p in data.patterns]


@cache
def _normaliser() -> tuple[re.Pattern[str], dict[str, str]]:
    mapping = {k.lower(): v for k, v in text_rules().normalise.items()}
    keys = sorted(mapping, key=len, reverse=True)
    return re.compile(r"(?<![\w'])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w'])"), mapping


@cache
def _speller() -> Speller:
    """Misspelt risk words ("myslef", "hurtng") are read as the word meant."""
    return Speller(text_rules().fuzzy_targets, min_length=5)


def normalise(text: str, *, idioms: Literal["removed", "marked", "read"] = "removed") -> str:
    """Lower case, straight quotes, slang and misspellings rewritten, and idioms `removed` (for the
    patterns), `marked` (the learned layer reads a word there, so "I want to cut down on coffee"
    does not become "I want to coffee") or `read` as what they say ("I want to reduce coffee")."""
    return _with_idioms(_plain(text), idioms)


def marked_and_read(text: str) -> tuple[str, str]:
    """`normalise` with idioms marked and with idioms read, spelling and slang rewritten once."""
    plain = _plain(text)
    return _with_idioms(plain, "marked"), _with_idioms(plain, "read")


def _plain(text: str) -> str:
    text = re.sub(r"[’‘`]", "'", text.lower())
    text = re.sub(r"[“”]", '"', text)
    text = _speller().correct(text)
    pattern, mapping = _normaliser()
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def _with_idioms(text: str, idioms: Literal["removed", "marked", "read"]) -> str:
    instead = {"removed": " ", "marked": IDIOM_MARK}.get(idioms)
    for idiom, says in _idioms():
        text = idiom.sub(instead or says, text)
    return re.sub(r"\s+", " ", text).strip()


def pattern_hit(text: str) -> tuple[str, str] | None:
    """(pattern id, the sentence it matched) for the first high-precision pattern in `text`."""
    for sentence in split_sentences(text) or [text]:
        normed = normalise(sentence)
        for item, rx in crisis_patterns():
            if rx.search(normed):
                return item.id, sentence
    whole = normalise(text)  # a pattern may span a sentence break ("I took them all. 40 pills")
    return next(((item.id, text) for item, rx in crisis_patterns() if rx.search(whole)), None)
