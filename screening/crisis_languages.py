"""The crisis screen in other languages: the kinds of crisis, each a named concept said the common
ways in each language's own words (crisis_languages.yaml), read before the "English only" notice,
so a crisis in any language gets the crisis reply. High precision by construction: first-person
intent, acts under way and present danger, not topics; figures of speech are listed per language
and every language's examples are tested."""

from __future__ import annotations

import re
import re._constants as sre_constants
import re._parser as sre_parser
import unicodedata
from functools import cache, cached_property
from pathlib import Path

from pydantic import Field, ValidationInfo, field_validator

from app.core.datafiles import parse_yaml
from app.core.learning import derived_cache
from app.core.records import Record

DATA = Path(__file__).with_name("crisis_languages.yaml")
# Validation context: every pattern of this very file already compiled in an earlier process.
_COMPILED_BEFORE = "patterns compiled before"

# Letters written more than one way, made one so that a pattern need not list them: the ones
# without a decomposition (ł, ß, dotless ı), Greek final sigma, apostrophes, Arabic alef maqsura,
# ta marbuta and the tatweel, Devanagari chandrabindu (written for anusvara) and nukta.
_SAME = str.maketrans({"ł": "l", "ß": "ss", "ı": "i", "ø": "o", "đ": "d", "ς": "σ",
                       "’": "'", "ʼ": "'", "‘": "'", "`": "'", "´": "'",
                       "ٱ": "ا", "ى": "ي", "ة": "ه", "ـ": None, "\u0901": "\u0902", "\u093c": None})


def _strip_marks(text: str) -> str:
    """Accents off Latin, Greek and Cyrillic letters, harakat and hamza off Arabic ones (people
    type them or not); other scripts' marks are letters' vowels (Devanagari) or voicing (kana)."""
    out: list[str] = []
    base = ""
    for char in unicodedata.normalize("NFD", text):
        if unicodedata.category(char) != "Mn":
            base = char
        elif base.isalpha() and (base < "\u0530" or "\u0600" <= base <= "\u06ff"):
            continue
        out.append(char)
    return unicodedata.normalize("NFC", "".join(out)).translate(_SAME)


def fold(text: str) -> str:
    """A message as the patterns see it: NFKC, lower case, marks and variant letters folded."""
    return _strip_marks(unicodedata.normalize("NFKC", text).lower())


def _compiles(items: list[str], info: ValidationInfo) -> list[str]:
    if not (info.context or {}).get(_COMPILED_BEFORE):
        for item in items:
            re.compile(item)
    return items


class Concepts(Record):
    """The kinds of crisis; every language says each of them (tests/test_crisis_languages.py)."""

    die_wish: list[str] = Field(min_length=1)  # wanting to die, not to live, ending it, a plan
    self_harm: list[str] = Field(min_length=1)  # cutting, burning, a blade in hand
    overdose_taken: list[str] = Field(min_length=1)  # the pills already swallowed
    method: list[str] = Field(min_length=1)  # lethal dose, height, hanging: how to die
    farewell: list[str] = Field(min_length=1)  # goodbye for ever, giving things away, no burden
    third_person: list[str] = Field(min_length=1)  # someone else about to die or missing at risk
    harm_others: list[str] = Field(min_length=1)  # going to kill or hurt someone, a knife drawn
    psychosis: list[str] = Field(min_length=1)  # voices commanding harm, acting on a delusion
    medical: list[str] = Field(min_length=1)  # not breathing, unconscious, seizure, NMS, chest pain

    @field_validator("*")
    @classmethod
    def _patterns_compile(cls, items: list[str], info: ValidationInfo) -> list[str]:
        return _compiles(items, info)


class Examples(Record):
    crisis: list[str] = Field(min_length=12)
    safe: list[str] = Field(min_length=8)


class Language(Record):
    # Matches start at a word's start, except in scripts without spaces (Chinese, Japanese) and in
    # Arabic, whose prefixes (و، ف، ب، س) are written onto the word.
    spaced: bool = True
    concepts: Concepts
    not_: list[str] = Field(default_factory=list, alias="not")
    examples: Examples

    @field_validator("not_")
    @classmethod
    def _figures_compile(cls, items: list[str], info: ValidationInfo) -> list[str]:
        return _compiles(items, info)


class LanguagesFile(Record):
    languages: dict[str, Language]


@cache
def languages() -> dict[str, Language]:
    data = parse_yaml(DATA.read_text(encoding="utf-8"))
    # A file whose patterns were all compiled and analysed before (its needs are on disk) is not
    # compiled again pattern by pattern: a broken pattern never gets that far.
    checked = _known_needs() is not None
    return LanguagesFile.model_validate(data, context={_COMPILED_BEFORE: checked}).languages


def _source(patterns: list[str], start: str) -> str:
    # Patterns are folded like messages (so written with or without accents), but not lower-cased:
    # that would turn \S into \s.
    return "|".join(f"{start}(?:{_strip_marks(p)})" for p in patterns)


class _Regex:
    """A pattern compiled at its first use: a message needs a few of the lexicon's patterns, and
    compiling all of them costs a short command seconds."""

    def __init__(self, source: str):
        self.source = source

    @cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.source, re.IGNORECASE)

    def finditer(self, text: str):
        return self.compiled.finditer(text)

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled.search(text)


class _Concept:
    def __init__(self, name: str, regex: _Regex, needs: frozenset[str] | None):
        self.name = name
        self.regex = regex
        # Strings one of which every match contains (None: no such set): most messages hold none of
        # them, and a substring test is a hundred times cheaper than scanning with the pattern.
        self.needs = needs

    @property
    def pattern(self) -> re.Pattern[str]:
        return self.regex.compiled


@cache
def _compiled() -> list[tuple[str, list[_Concept], _Regex | None]]:
    known = _known_needs() or {}
    found: dict[str, dict[str, list[str] | None]] = {}
    compiled = []
    for code, lang in languages().items():
        concepts = []
        for name, patterns in lang.concepts:
            regex = _Regex(_source(patterns, r"(?<!\w)" if lang.spaced else ""))
            if name in known.get(code, {}):
                kept = known[code][name]
                needs = None if kept is None else frozenset(kept)
            else:  # worked out once per file, code and Python: this compiles the pattern
                needs = _needs(regex.compiled)
                found.setdefault(code, {})[name] = None if needs is None else sorted(needs)
            concepts.append(_Concept(name, regex, needs))
        figures = _Regex(_source(lang.not_, "")) if lang.not_ else None
        if found and figures is not None:
            figures.compiled  # noqa: B018 - a broken figure of speech fails here, before anything is kept
        compiled.append((code, concepts, figures))
    if found:
        derived_cache.write(_NEEDS, _needs_key(), {code: {**known.get(code, {}), **found.get(code, {})}
                                                   for code in languages()})
    return compiled


_NEEDS = "crisis-languages-needs"


@cache
def _needs_key() -> str:
    return derived_cache.key_of(Path(__file__).read_bytes(), DATA.read_bytes())


def _known_needs() -> dict[str, dict[str, list[str] | None]] | None:
    """Every concept's literal set, as an earlier process worked it out from this very file."""
    known = derived_cache.read(_NEEDS, _needs_key())
    if not isinstance(known, dict) or not all(isinstance(concepts, dict) for concepts in known.values()):
        return None
    return known


def find_concept(text: str) -> tuple[str, str, str] | None:
    """(language code, concept, the folded words that matched) for a crisis in any language."""
    folded = fold(text)
    for code, concepts, figures in _compiled():
        spans: list[tuple[int, int]] | None = None
        for concept in concepts:
            if concept.needs is not None and not any(part in folded for part in concept.needs):
                continue
            # A match touching a figure of speech ("dying of laughter") is that figure, not a crisis.
            if spans is None:
                spans = [m.span() for m in figures.finditer(folded)] if figures else []
            for match in concept.pattern.finditer(folded):
                if not any(start < match.end() and match.start() < end for start, end in spans):
                    return code, concept.name, match.group(0)
    return None


def _needs(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """Literal strings one of which every match of `pattern` contains, read off its parse tree
    (messages and patterns are folded to lower case, so the literals are lower-cased too). None
    when a match can do without any literal, or when this Python parses patterns differently:
    the set only ever lets a scan be skipped that could not have matched."""
    try:
        return _needed_in(sre_parser.parse(pattern.pattern, pattern.flags).data)
    except Exception:  # a private parser's shape changed: scan every time, as before
        return None


def _needed_in(items: list) -> frozenset[str] | None:
    """For a sequence: the best of the sets its parts require (longest shortest literal)."""
    best: frozenset[str] | None = None
    run: list[str] = []

    def consider(found: frozenset[str] | None) -> None:
        nonlocal best
        if found and (best is None or min(map(len, found)) > min(map(len, best))):
            best = found

    for op, value in items:
        if op is sre_constants.LITERAL:
            run.append(chr(value).lower())
            continue
        consider(frozenset(["".join(run)]) if run else None)
        run = []
        if op is sre_constants.SUBPATTERN:
            consider(_needed_in(value[-1].data))
        elif op is sre_constants.BRANCH:
            options = [_needed_in(branch.data) for branch in value[1]]
            consider(None if any(o is None for o in options) else frozenset().union(*options))
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) and value[0] >= 1:
            consider(_needed_in(value[2].data))
    consider(frozenset(["".join(run)]) if run else None)
    return best


def find(text: str) -> tuple[str, str] | None:
    """(language code, the words that matched) for a crisis phrase in any language, else None."""
    found = find_concept(text)
    return (found[0], found[2]) if found else None
