"""Transparency: the draft never claims to be a person or a clinician (rejection) and never
claims certainty the sources do not give ("guarantees", "will definitely", "perfectly safe")
(warning). A negated claim ("I'm not a doctor", "I can't guarantee") is honest, not a violation."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from app.core.text import split_sentences
from judges.local import patterns
from judges.schema import DraftContext, Finding

if TYPE_CHECKING:
    from judges.local.resources import Resources

CHECK = "transparency"


def _hits(key: str, sentences: list[str]) -> list[str]:
    negated = re.compile(patterns.section("transparency")["negated_before"], re.IGNORECASE)
    found = []
    for sentence in sentences:
        for match in patterns.regex("transparency", key).finditer(sentence):
            if not negated.search(sentence[:match.start()]):
                found.append(sentence)
                break
    return found


def check(ctx: DraftContext, _res: Resources) -> Finding:
    if not ctx.draft:
        return Finding(check=CHECK, flagged=False, score=0.0, detail="no draft")
    sentences = split_sentences(ctx.draft)
    persona = _hits("persona_claim", sentences)
    if persona:
        return Finding(check=CHECK, flagged=True, score=1.0, sentences=persona,
                       detail="claims to be a person or a clinician", suggested_verdict="reject")
    certain = _hits("overclaim", sentences)
    if certain:
        return Finding(check=CHECK, flagged=True, score=0.7, sentences=certain,
                       detail="claims more certainty than the sources give", suggested_verdict="warn")
    return Finding(check=CHECK, flagged=False, score=0.0)
