"""Sources are untrusted input: a knowledge-base file may carry an instruction meant for the
chatbot ("ignore your rules…") or unsafe medicine advice ("take twice your dose…"), by accident or
by attack. The judges' own checks read every sentence of a source: the same patterns that catch an
injection in a user's message and a medicine change in a draft.

The knowledge-base loader quarantines a flagged source (not indexed, never shown to a model)
unless its front matter approves each flagged sentence; the extractive generator never quotes a
flagged sentence, approved or not.
"""

from __future__ import annotations

import re
from functools import lru_cache

from app.core.records import Record
from app.core.text import split_sentences
from judges.local import patterns
from judges.local.medication import advice_in


class SourceFlag(Record):
    """One sentence of a source that a judge check flags."""

    check: str  # "injection", "medication_change" or "encourages_harm"
    sentence: str
    reason: str
    line: int = 0  # in the file, when known


@lru_cache(maxsize=65536)
def flag_for(sentence: str) -> tuple[str, str] | None:
    """(check, reason) if a judge check flags this sentence, else None."""
    if m := patterns.regex("leakage", "injection").search(sentence):
        return "injection", f'an instruction to the chatbot ("{m.group(0)}")'
    if phrase := advice_in(sentence):
        return "medication_change", f'advises a medicine or dose change ("{phrase}")'
    if m := patterns.regex("crisis", "draft_encouraging").search(sentence.lower()):
        return "encourages_harm", f'encourages or informs self-harm ("{m.group(0)}")'
    return None


def audit(body: str, file_text: str | None = None) -> list[SourceFlag]:
    """Every flagged sentence of a source's body; with the file's text, the line each starts on."""
    flags = []
    for sentence in _units(body):
        if found := flag_for(sentence):
            check, reason = found
            flags.append(SourceFlag(check=check, sentence=sentence, reason=reason,
                                    line=_line_of(sentence, file_text) if file_text else 0))
    return flags


def _units(body: str) -> list[str]:
    """Sentences, read line by line first so that headings and list items stand alone."""
    units = []
    for paragraph in re.split(r"\n\s*\n", body):
        lines = [re.sub(r"^\s*(?:[-*+]|\d+[.)]|#+)\s+", "", line) for line in paragraph.splitlines()]
        units += split_sentences(" ".join(line.strip() for line in lines if line.strip()))
    return units


def _line_of(sentence: str, text: str) -> int:
    first_words = sentence.split()[:6]
    pattern = r"\s+(?:[-*+]\s+)?".join(re.escape(w) for w in first_words)
    match = re.search(pattern, text)
    return text.count("\n", 0, match.start()) + 1 if match else 0
