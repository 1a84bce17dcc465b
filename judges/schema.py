"""Typed data the CAF passes around: what is judged, what a check found, what an LLM judge must
answer, and what the filter decided. Records shared with other layers (judgements, the filter's
report, source texts) live in `app.core.records`."""

from __future__ import annotations

from pydantic import Field

from app.core.records import CafReport, PendingWarning, Record, SourceText, Turn, Verdict


class DraftContext(Record):
    """Everything a judge may look at for one draft."""

    user: str
    draft: str | None = None  # None: judge the user message alone (input screening)
    sources: list[SourceText] = Field(default_factory=list)
    history: list[Turn] = Field(default_factory=list)
    # Fixed, vetted text the product adds after whatever draft passes (the crisis contacts soon
    # after a crisis): the crisis check counts it as the draft's response; no judge reads it as
    # the draft's own content.
    closing: str = ""
    # The crisis evidence the input screen found in the recent turns, read as it read them (with
    # the messages before); None when not known, and the crisis check reads `history` again.
    crisis_before: list[str] | None = None
    # The input screen cleared the learned layer's unsure crisis reading of the user message (read
    # with the conversation, or by the screener): the crisis check does not raise it again.
    crisis_cleared: bool = False

    def source(self, source_id: str) -> SourceText | None:
        return next((s for s in self.sources if s.id == source_id), None)


class Finding(Record):
    """What one tier-0 local check found. `score` is 0 (clean) to 1 (certain violation)."""

    check: str
    flagged: bool
    score: float = Field(ge=0.0, le=1.0)
    sentences: list[str] = Field(default_factory=list)
    detail: str = ""
    suggested_verdict: Verdict = "pass"
    # The lowest verdict an LLM judge may lower this finding to. "reject" for an exact fact (a
    # citation to a source that was not given); "warn" for a strong finding (the rules' text
    # leaked, a medicine change advised, a specific medical claim uncited, no citation at all);
    # "pass" for a heuristic the LLM tiers may overrule.
    floor: Verdict = "pass"


class JudgeVerdict(Record):
    """A judge's decision. This structure is also what LLM judges must return."""

    verdict: Verdict = Field(description="pass, warn (deliver but warn the chatbot) or reject")
    rule: str = Field(default="", description="the id of the rule violated, empty when pass")
    offending: list[str] = Field(default_factory=list, description="the offending sentences, quoted")
    reason: str = Field(default="", description="why, in one or two sentences")
    suggested_fix: str = Field(default="", description="how to rewrite the draft to comply")


class FilterOutcome(Record):
    """The filter's decision on one turn's draft. `text` is what may be delivered: a draft the
    filter passed (or warned on) in this turn, or None when nothing passed; the caller then
    delivers a fixed reply, never an unchecked text."""

    text: str | None
    report: CafReport
    warnings: list[PendingWarning] = Field(default_factory=list)  # issued this turn

    @property
    def delivered(self) -> bool:
        return self.text is not None
