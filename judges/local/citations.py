"""Citations: every id cited in the draft must be one of the sources given for this turn, and a
draft that makes claims while sources were given must cite at least one of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.core.text import citations_in, split_sentences, words
from judges.local.kinds import kind
from judges.schema import DraftContext, Finding

if TYPE_CHECKING:
    from judges.local.resources import Resources

CHECK = "citations"


def check(ctx: DraftContext, _res: Resources) -> Finding:
    if not ctx.draft:
        return Finding(check=CHECK, flagged=False, score=0.0, detail="no draft")
    known = {s.id for s in ctx.sources}
    cited = citations_in(ctx.draft)
    unknown = [i for i in cited if i not in known]
    if unknown:
        offending = [s for s in split_sentences(ctx.draft) if set(citations_in(s)) & set(unknown)]
        provided = ", ".join(sorted(known)) or "none"
        return Finding(
            check=CHECK, flagged=True, score=1.0, sentences=offending,
            detail=f"cites {', '.join(unknown)}, which {'was' if len(unknown) == 1 else 'were'} not "
                   f"provided (provided: {provided})",
            suggested_verdict="reject", floor="reject",
        )
    if known and not cited:
        # An answer that cites nothing cannot be checked against its sources: a draft that only
        # echoes the question, or one written from the model's memory, looks just like this.
        claims = [s for s in split_sentences(ctx.draft) if len(words(s)) >= 3 and kind(s) == "claim"]
        if claims:
            return Finding(check=CHECK, flagged=True, score=0.8, sentences=claims[:3],
                           detail=f"cites none of the {len(known)} sources it was given",
                           suggested_verdict="reject", floor="warn")
    return Finding(check=CHECK, flagged=False, score=0.0)
