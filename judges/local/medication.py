"""Medication changes: advice to start, stop, skip, swap, reduce or increase a medicine or a dose,
or any suggested dose. Warnings against changing ("do not stop suddenly; talk to your
prescriber"), descriptions ("stopping suddenly can bring symptoms back") and the prescriber's own
decisions ("your prescriber may lower the dose") are allowed."""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from app.core.lexicon import expand
from app.core.text import split_sentences
from judges.local import patterns
from judges.local.kinds import kind
from judges.schema import DraftContext, Finding

if TYPE_CHECKING:
    from judges.local.resources import Resources

CHECK = "medication_change"


@cache
def _compiled(key: str) -> re.Pattern[str]:
    return re.compile(expand(patterns.section("medication")[key]), re.IGNORECASE)


@lru_cache(maxsize=8192)  # a source's sentences are read again with each extractive answer
def advice_in(sentence: str) -> str | None:
    """The advising phrase in a sentence, or None."""
    if kind(sentence) in ("question", "meta"):
        return None
    if not _compiled("medicine_context").search(sentence):
        return None
    for match in patterns.regex("medication", "advice").finditer(sentence):
        before, after = sentence[:match.start()], sentence[match.end():]
        if _compiled("negated_before").search(before) or _compiled("prescriber_subject").search(before):
            continue
        if _compiled("descriptive_after").search(after):
            continue
        return match.group(0)
    return None


def check(ctx: DraftContext, _res: Resources) -> Finding:
    if not ctx.draft:
        return Finding(check=CHECK, flagged=False, score=0.0, detail="no draft")
    found = [(s, phrase) for s in split_sentences(ctx.draft) if (phrase := advice_in(s))]
    if not found:
        return Finding(check=CHECK, flagged=False, score=0.0)
    phrases = ", ".join(f'"{p}"' for _, p in found[:3])
    return Finding(check=CHECK, flagged=True, score=1.0, sentences=[s for s, _ in found],
                   detail=f"advises a medicine or dose change ({phrases}); send dose and medicine "
                          "decisions to the prescriber", suggested_verdict="reject", floor="warn")
