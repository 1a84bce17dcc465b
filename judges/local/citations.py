"""Citation validity: every id cited in the draft must be one of the sources given for this turn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.core.text import citations_in, split_sentences
from judges.schema import DraftContext, Finding

if TYPE_CHECKING:
    from judges.local.resources import Resources

CHECK = "citations"


def check(ctx: DraftContext, _res: Resources) -> Finding:
    if not ctx.draft:
        return Finding(check=CHECK, flagged=False, score=0.0, detail="no draft")
    known = {s.id for s in ctx.sources}
    unknown = [i for i in citations_in(ctx.draft) if i not in known]
    if not unknown:
        return Finding(check=CHECK, flagged=False, score=0.0)
    offending = [s for s in split_sentences(ctx.draft) if set(citations_in(s)) & set(unknown)]
    provided = ", ".join(sorted(known)) or "none"
    return Finding(
        check=CHECK, flagged=True, score=1.0, sentences=offending,
        detail=f"cites {', '.join(unknown)}, which {'was' if len(unknown) == 1 else 'were'} not "
               f"provided (provided: {provided})",
        suggested_verdict="reject", certain=True,
    )
