"""Patterns, word lists and thresholds of the local checks, loaded from `patterns.yaml`.

Keeping them as data means a reviewer can read (and a deployment can extend) what tier 0 looks
for without reading code. Regex lists may use `{name}` to insert a word list from `lexicon`
as an alternation, e.g. `{medicines}`.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from app.errors import ConfigError

PATTERNS_FILE = Path(__file__).with_name("patterns.yaml")


@cache
def data() -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(PATTERNS_FILE.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{PATTERNS_FILE}: cannot load the local-check patterns: {error}") from error
    if not isinstance(loaded, dict) or "thresholds" not in loaded or "lexicon" not in loaded:
        raise ConfigError(f"{PATTERNS_FILE}: expected top-level 'thresholds' and 'lexicon' sections")
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


def word_list(name: str) -> list[str]:
    return list(data()["lexicon"][name])


def _alternation(name: str) -> str:
    return "|".join(re.escape(w) if not w.startswith("re:") else w[3:]
                    for w in sorted(word_list(name), key=len, reverse=True))


def _expand(pattern: str) -> str:
    return re.sub(r"\{([a-z_]+)\}", lambda m: f"(?:{_alternation(m.group(1))})", pattern)


@cache
def regex(section_name: str, key: str) -> re.Pattern[str]:
    """One compiled, case-insensitive alternation of the patterns listed at section.key."""
    items = section(section_name).get(key)
    if not items:
        raise ConfigError(f"{PATTERNS_FILE}: no patterns at {section_name}.{key}")
    parts = [f"(?:{_expand(p)})" for p in items]
    try:
        return re.compile("|".join(parts), re.IGNORECASE)
    except re.error as error:
        raise ConfigError(f"{PATTERNS_FILE}: bad regex at {section_name}.{key}: {error}") from error


@cache
def words_regex(name: str) -> re.Pattern[str]:
    """A whole-word regex for a lexicon word list."""
    return re.compile(rf"\b(?:{_alternation(name)})\b", re.IGNORECASE)


def first_match(section_name: str, key: str, text: str) -> str | None:
    match = regex(section_name, key).search(text)
    return match.group(0) if match else None
