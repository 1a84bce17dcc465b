"""The crisis judge's local check: a draft after a crisis, in this message or the last few, must
respond to it and never brush it aside, and no draft may encourage or inform self-harm. The
message itself is read by the input screen (screening/crisis.py)."""

from __future__ import annotations

import re

from app.core.text import split_sentences
from judges.local import patterns
from judges.schema import DraftContext, Finding
from screening.crisis import Screens, answerable_emergency, assess, crisis_earlier

CHECK = "crisis"


def detect_crisis(text: str, res: Screens, *, cleared: bool = False) -> Finding:
    """The screen's crisis reading of a user message, as the judge's finding; `cleared`: the input
    screen cleared the learned layer's unsure reading of it (`DraftContext.crisis_cleared`)."""
    found = assess(text, res)
    flagged = found.crisis and not (cleared and found.layer == "model")
    return Finding(check=CHECK, flagged=flagged, score=found.score, sentences=found.evidence if flagged else [],
                   detail=f"crisis ({found.layer})" if flagged else "",
                   suggested_verdict="reject" if flagged else "pass")


def check(ctx: DraftContext, res: Screens) -> Finding:
    """The crisis judge's local check: the user message, earlier user turns, and the draft."""
    user = detect_crisis(ctx.user, res, cleared=ctx.crisis_cleared)
    if ctx.draft is None or (user.flagged and not answerable_emergency(ctx.user, res)):
        return user
    # A medical emergency the graph answers (how to get medical help first) is judged like a
    # crisis earlier in the conversation: the draft must respond to it and not brush it aside.
    flagged_before = user.sentences if user.flagged else ctx.crisis_before if ctx.crisis_before is not None \
        else crisis_earlier([t.content for t in ctx.history if t.role == "user"], res)
    draft = ctx.draft
    minimising = patterns.regex("crisis", "draft_minimising").search(draft)
    encouraging = patterns.regex("crisis", "draft_encouraging").search(draft)
    if encouraging:
        return Finding(check=CHECK, flagged=True, score=1.0, sentences=_containing(draft, encouraging),
                       detail="the draft encourages or informs self-harm", suggested_verdict="reject")
    if flagged_before:
        responds = patterns.regex("crisis", "draft_response").search(f"{draft}\n{ctx.closing}")
        if minimising or not responds:
            why = "minimises" if minimising else "ignores"
            return Finding(check=CHECK, flagged=True, score=0.9, sentences=flagged_before[:3],
                           detail=f"the draft {why} a crisis signal{'' if user.flagged else ' earlier in the conversation'}",
                           suggested_verdict="reject")
    return Finding(check=CHECK, flagged=False, score=0.0)


def _containing(text: str, match: re.Match[str]) -> list[str]:
    found = match.group(0).lower()
    return [s for s in split_sentences(text) if found in s.lower()] or [match.group(0)]
