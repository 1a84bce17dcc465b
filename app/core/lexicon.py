"""Word lists the input screen's patterns and the draft checks share (lexicon.yaml), with the
medicine vocabulary's names as `medicines`: a regex names one as `{name}` (`expand`)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml
from pydantic import ValidationError

from app.core.datafiles import parse_yaml
from app.core.errors import ConfigError
from app.core.medicines import vocabulary
from app.core.records import Record

LEXICON_FILE = Path(__file__).with_name("lexicon.yaml")
_REFERENCE = re.compile(r"\{([a-z_]+)\}")


class Lexicon(Record):
    medicines: list[str]  # filled from the medicine vocabulary, not written in the file
    medicine_words: list[str]
    care_team: list[str]


@cache
def lexicon() -> dict[str, list[str]]:
    """Every word list by name, validated. Raises ConfigError naming the file and the problem."""
    try:
        loaded = parse_yaml(LEXICON_FILE.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{LEXICON_FILE}: cannot load the word lists: {error}") from error
    if isinstance(loaded, dict):
        loaded["medicines"] = vocabulary().names()  # one vocabulary for the app, the screen and the judges
    try:
        return Lexicon.model_validate(loaded).model_dump()
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(file)'}: {e['msg']}"
                             for e in error.errors())
        raise ConfigError(f"{LEXICON_FILE}: {problems}") from error


def word_list(name: str) -> list[str]:
    return list(lexicon()[name])


def unknown_names(pattern: str) -> list[str]:
    """The `{name}`s in a pattern that name no word list."""
    return [name for name in _REFERENCE.findall(pattern) if name not in lexicon()]


def _alternation(words: list[str]) -> str:
    return "|".join(re.escape(w) if not w.startswith("re:") else w[3:]
                    for w in sorted(words, key=len, reverse=True))


def expand(pattern: str) -> str:
    """The pattern with each `{name}` replaced by its word list as an alternation."""
    return _REFERENCE.sub(lambda m: f"(?:{_alternation(lexicon()[m.group(1)])})", pattern)


@cache
def words_regex(name: str) -> re.Pattern[str]:
    """A whole-word regex for a word list."""
    return re.compile(rf"\b(?:{_alternation(word_list(name))})\b", re.IGNORECASE)
