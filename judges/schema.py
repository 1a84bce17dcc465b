"""Typed data the CAF passes around: what is judged, what a check found, what a judge decided."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["pass", "warn", "reject"]
Expected = Literal["pass", "warn", "reject", "crisis"]
VERDICT_ORDER: dict[str, int] = {"pass": 0, "warn": 1, "reject": 2}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourceText(Strict):
    id: str
    title: str = ""
    text: str

    @classmethod
    def of(cls, source) -> SourceText:
        """From a knowledge-base source (anything with id, title and body)."""
        return cls(id=source.id, title=source.title, text=source.body)


class Turn(Strict):
    role: Literal["user", "assistant"]
    content: str


class DraftContext(Strict):
    """Everything a judge may look at for one draft."""

    user: str
    draft: str | None = None  # None: judge the user message alone (input screening)
    sources: list[SourceText] = Field(default_factory=list)
    history: list[Turn] = Field(default_factory=list)

    def source(self, source_id: str) -> SourceText | None:
        return next((s for s in self.sources if s.id == source_id), None)


class Finding(Strict):
    """What one tier-0 local check found. `score` is 0 (clean) to 1 (certain violation)."""

    check: str
    flagged: bool
    score: float = Field(ge=0.0, le=1.0)
    sentences: list[str] = Field(default_factory=list)
    detail: str = ""
    suggested_verdict: Verdict = "pass"
    # An exact fact, not a heuristic (a citation to a source that was not given): no LLM judge
    # may overrule it, so its verdict is a floor for the judge's final word.
    certain: bool = False


class JudgeVerdict(Strict):
    """A judge's decision. This structure is also what LLM judges must return."""

    verdict: Verdict = Field(description="pass, warn (deliver but warn the chatbot) or reject")
    rule: str = Field(default="", description="the id of the rule violated, empty when pass")
    offending: list[str] = Field(default_factory=list, description="the offending sentences, quoted")
    reason: str = Field(default="", description="why, in one or two sentences")
    suggested_fix: str = Field(default="", description="how to rewrite the draft to comply")


class Judgement(Strict):
    """One judge's decision at one tier, as recorded in the turn trace."""

    judge: str
    tier: int
    verdict: Verdict
    model: str = ""  # the LLM that judged (tiers 1 and 2)
    rule: str = ""
    reason: str = ""
    offending: list[str] = Field(default_factory=list)
    suggested_fix: str = ""
    score: float | None = None  # tier 0's score
    error: str | None = None  # the judge failed (timeout, error, malformed): counted as a flag
    latency_ms: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0


class CafReport(Strict):
    """What the filter did with one turn's draft(s)."""

    judges_applied: list[str] = Field(default_factory=list)
    judgements: list[Judgement] = Field(default_factory=list)
    final_verdict: Verdict | Literal["crisis"] = "pass"
    refine_rounds: int = 0
    fallback_used: bool = False
    warnings_issued: list[str] = Field(default_factory=list)
    escalated: bool = False
    llm_calls: int = 0
    llm_tokens: int = 0
    latency_ms: float = 0.0
