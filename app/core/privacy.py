"""Masking contact details: e-mail addresses and phone numbers become `[email]` and `[phone]`.

The turn log and every export built from it keep the user's words only in masked form; the
conversation itself (the checkpointer's messages, what the user sees) is never masked.

No dependency of ours detects phone numbers (`phonenumbers` needs a region to parse national
formats and is not installed), so this is two short patterns, each with positive and negative
examples in `tests/test_privacy.py`. The phone pattern is deliberately narrow; a number is masked
only when it has 7 to 15 digits and one of these shapes:

  `+44 20 7946 0958`, `+1 (202) 555-0143`, `+44 (0)20 7946 0958`, `0044 20 7946 0958`
      international: `+` or `00`, a country code, then groups of digits;
  `(020) 7946 0958`, `8 (495) 123-45-67`  a bracketed area code, then groups;
  `020 7946 0958`, `07700 900123`       a national number: a leading 0, then groups;
  `202-555-0143`, `1-800-273-8255`      the North American 3-3-4 shape;
  `07700900123`, `2025550143`           an unbroken run of 7 to 15 digits.

Groups are separated by one space, dash or dot. Doses (`20 mg`, `100-1000 mg`), years, source
ids (`S01`), numbers under 7 digits and dates (`2024-05-01`, `01.05.2024`, `01 05 2024`) are left
alone. Known misses, by design: a bare local number such as `555-0143` (the same shape as a range,
`100-1000`) and numbers spelled out in words.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from app.core.records import Record

EMAIL_MASK = "[email]"
PHONE_MASK = "[phone]"

EMAIL = re.compile(r"(?<![\w.%+-])[\w.%+-]+@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}(?![\w-])")

_SEP = r"[ .-]"  # one space, dash or dot between groups
PHONE = re.compile(rf"""
    (?<![\w+])                                    # not inside a word, an id or another number
    (?:
        (?:\+|00)\d{{1,3}}                        # international: +44, 0044
        (?:{_SEP}?\(0\))?                         # an optional trunk zero: +44 (0)20
        (?:{_SEP}?\(?\d{{1,5}}\)?){{2,6}}         # then groups: 20 7946 0958, (202) 555-0143
      | (?:\d{_SEP})?\(\d{{2,5}}\){_SEP}?\d{{2,5}}(?:{_SEP}?\d{{2,5}}){{0,3}}  # (020) 7946 0958
      | 0\d{{1,5}}(?:{_SEP}?\d{{2,5}}){{1,4}}         # national, trunk 0: 020 7946 0958
      | (?:1{_SEP})?\d{{3}}{_SEP}\d{{3}}{_SEP}\d{{4}}  # North American: 202-555-0143
      | \d{{7,15}}                                # an unbroken run
    )
    (?!\w)                                        # ... and not followed by a letter or digit
""", re.VERBOSE)

# Dates share the national shape (01.05.2024 has eight digits and a leading zero): never masked.
_DATE = re.compile(r"\d{1,2}([ ./-])\d{1,2}\1(?:19|20)\d{2}|(?:19|20)\d{2}([ ./-])\d{1,2}\2\d{1,2}")
_MIN_DIGITS, _MAX_DIGITS = 7, 15


def _phone_or_not(match: re.Match[str]) -> str:
    found = match.group(0)
    digits = sum(c.isdigit() for c in found)
    if not _MIN_DIGITS <= digits <= _MAX_DIGITS or _DATE.fullmatch(found):
        return found
    return PHONE_MASK


def mask(text: str) -> str:
    """`text` with e-mail addresses and phone numbers replaced by `[email]` and `[phone]`.
    Idempotent: masking masked text changes nothing."""
    if not text:
        return text
    return PHONE.sub(_phone_or_not, EMAIL.sub(EMAIL_MASK, text))


# Fields of a record that hold identifiers, codes or timestamps, never anybody's words: left as
# they are (a thread id of twelve hex digits can be all digits). Every other string is masked, so
# a free-text field added later is private by default.
STRUCTURAL_FIELDS = frozenset({
    "thread_id", "started_at", "created_at", "route", "caf_mode", "mode", "generator", "outcome",
    "source_id", "title", "id", "prompt_sources", "dropped_sources", "citations",
    "invalid_citations", "judges_applied", "judge", "rule", "verdict", "final_verdict", "model",
    "role", "purpose", "node",
})

R = TypeVar("R", bound=Record)


def mask_record(record: R) -> R:
    """A copy of `record` (a `TurnTrace`, say) with every free-text string masked: the user's
    message, the draft, the answer, the sub-questions, judges' quoted evidence and reasons."""
    return type(record).model_validate(_mask_value(record.model_dump(mode="python")))


def _mask_value(value: Any, key: str | None = None) -> Any:
    if key in STRUCTURAL_FIELDS:
        return value
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {k: _mask_value(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_mask_value(v) for v in value)
    return value
