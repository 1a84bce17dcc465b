"""Verification reminder: a draft about treatment, medicines, side effects or symptoms must remind
the person to check with their care team (doctor, nurse, pharmacist...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.core.text import split_sentences
from judges.local import patterns
from judges.local.kinds import is_referral, kind
from judges.schema import DraftContext, Finding

if TYPE_CHECKING:
    from judges.local.resources import Resources

CHECK = "verification"


def check(ctx: DraftContext, _res: Resources) -> Finding:
    if not ctx.draft:
        return Finding(check=CHECK, flagged=False, score=0.0, detail="no draft")
    sentences = split_sentences(ctx.draft)
    topics = patterns.regex("verification", "topics")
    # Only statements count: "I can't share that, but I can help with treatment questions" is not
    # treatment information.
    medical = [s for s in sentences if topics.search(s) and kind(s) in ("claim", "empathy")]
    if not medical or any(is_referral(s) for s in sentences):
        return Finding(check=CHECK, flagged=False, score=0.0)
    return Finding(check=CHECK, flagged=True, score=0.6, sentences=medical[:3],
                   detail="gives treatment or symptom information without a reminder to check "
                          "it with the care team (doctor, nurse or pharmacist)",
                   suggested_verdict="warn")
