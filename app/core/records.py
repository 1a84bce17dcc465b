"""The typed records that cross layers: what a model call cost, what retrieval found, what a judge
decided, what the filter did, and the trace of a whole turn.

They live at the bottom so that every layer (judges, retrieval, the graph, the store, the app)
reads one definition. None of them imports LangGraph: the store and the scoring tools load
traces without the graph.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["pass", "warn", "reject"]
VERDICT_ORDER: dict[str, int] = {"pass": 0, "warn": 1, "reject": 2}
CafMode = Literal["on", "off", "tier0"]  # per turn: the configured filter, none, or local checks only
Route = Literal["answer", "boundary", "crisis", "small_talk", "clarify", "no_match", "notice"]
Generator = Literal["llm", "extractive", "card", "fixed"]  # card: a vetted answer card


def utc_now() -> str:
    """Now, in UTC, as ISO 8601: how every record and table stamps its times."""
    return datetime.now(UTC).isoformat()


class Record(BaseModel):
    """The base of every record and data file schema: unknown fields are errors, not ignored."""

    model_config = ConfigDict(extra="forbid")


# -- model calls -------------------------------------------------------------------------------
class ModelCall(Record):
    role: str
    model: str
    purpose: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    ok: bool = True
    error: str | None = None


# -- sources -----------------------------------------------------------------------------------
class SourceText(Record):
    id: str
    title: str = ""
    text: str
    answers: dict[str, list[str]] = Field(default_factory=dict)  # a question -> its sentences that answer it

    @classmethod
    def of(cls, source) -> SourceText:
        """From a knowledge-base source (anything with id, title, body and answers)."""
        return cls(id=source.id, title=source.title, text=source.body, answers=source.answers)


class Candidate(Record):
    source_id: str
    title: str
    confidence: float = Field(ge=0.0, le=1.0)  # calibrated enough to threshold
    part: str | None = None  # the sub-question it answers


class Identification(Record):
    outcome: Literal["clear", "middling", "none"]
    candidates: list[Candidate]  # ranked, best first
    parts: list[str]  # the sub-questions
    latency_ms: float
    context: str = ""  # what the conversation was about, when the message was read with it
    model_calls: list[ModelCall] = Field(default_factory=list)  # the summary strategy's, if used


# -- conversation ------------------------------------------------------------------------------
class Turn(Record):
    role: Literal["user", "assistant"]
    content: str


# -- the filter --------------------------------------------------------------------------------
class Judgement(Record):
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


class CafReport(Record):
    """What the filter did with one turn's draft(s)."""

    mode: CafMode = "on"
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
    model_calls: list[ModelCall] = Field(default_factory=list)  # the judges' and the refiner's
    errors: list[str] = Field(default_factory=list)


class PendingWarning(Record):
    """A judge's warning, shown to the chatbot on the next turns until it expires."""

    judge: str
    rule: str
    message: str
    issued_turn: int
    expires_after_turn: int

    def active_at(self, turn: int) -> bool:
        return self.issued_turn < turn <= self.expires_after_turn


# -- a turn ------------------------------------------------------------------------------------
class InputScreen(Record):
    """The user's message after normalisation, and where it should go."""

    text: str
    route: Literal["answer", "crisis", "small_talk", "notice"] = "answer"
    notices: list[str] = Field(default_factory=list)  # told to the user: trimmed, language…
    reply: str | None = None  # for route "notice": the whole reply (empty message, say)
    crisis_score: float = 0.0
    # what found the crisis: "language:xx", "pattern:<id>", "model", "model:languages", "llm", or
    # "conversation" (the turn after a crisis)
    crisis_layer: str = ""
    crisis_evidence: list[str] = Field(default_factory=list)
    small_talk_score: float = 0.0
    small_talk_kind: str = ""  # the learned layer's likeliest kind ("farewell", "thanks", …)
    personal_advice: bool = False  # asks for advice on the writer's own case: a boundary reply
    boundary_kinds: list[str] = Field(default_factory=list)  # the kinds of such request it may be, likeliest first
    crisis_kind: str = ""  # the learned layer's likeliest kind of crisis ("medical_emergency", …)
    crisis_goes_on: bool = False  # read as a crisis by the learned layer alone right after one
    # only the learned layer saw a crisis, below its confident line, and no screener agreed
    crisis_unsure: bool = False
    # that unsure crisis, cleared: read with the conversation, or by the screener's second look
    crisis_cleared: bool = False
    urgent: bool = False  # someone is unwell now: the answer leads with how to get help today
    follow_up: bool = False  # leans on the conversation so far ("tell me more", "why?")
    language: str = ""  # the other language the message is written in ("de", "hi", …); "" for English


class CrisisMark(Record):
    """A turn the screen read as a crisis, as it read it: alone, with the messages before it, or by
    a model. What the turns after it look back at; the message re-read alone may show no danger."""

    turn: int
    kind: str = ""  # the learned layer's likeliest kind ("medical_emergency", …); "" when none
    evidence: list[str] = Field(default_factory=list)


class NodeRun(Record):
    node: str
    latency_ms: float
    note: str = ""


class TurnTrace(Record):
    """Everything that happened in one turn: the record drift tests and scoring read."""

    thread_id: str = ""
    turn: int = 0
    started_at: str = Field(default_factory=utc_now)
    user_message: str = ""
    resolved_question: str = ""  # the message read with the conversation, when that changed it
    route: Route = "answer"
    notices: list[str] = Field(default_factory=list)
    crisis_cleared: bool = False  # the screen cleared an unsure crisis reading (`InputScreen.crisis_cleared`)
    identification: Identification | None = None
    prompt_sources: list[str] = Field(default_factory=list)
    dropped_sources: list[str] = Field(default_factory=list)
    warnings_in_prompt: list[str] = Field(default_factory=list)
    generator: Generator | None = None
    card: str | None = None  # the vetted answer card the draft came from, if any
    draft: str | None = None
    answer: str = ""
    closing: str = ""  # fixed text added after the filter (the crisis contacts soon after a crisis)
    citations: list[str] = Field(default_factory=list)  # the delivered answer's (the draft's until then)
    invalid_citations: list[str] = Field(default_factory=list)  # the draft's citations of sources it was not given
    caf: CafReport | None = None  # what the Critical Analysis Filter did this turn
    caf_mode: CafMode = "on"
    fallback_used: bool = False
    errors: list[str] = Field(default_factory=list)
    nodes: list[NodeRun] = Field(default_factory=list)
    model_calls: list[ModelCall] = Field(default_factory=list)

    @property
    def total_ms(self) -> float:
        return sum(n.latency_ms for n in self.nodes)

    @property
    def caf_enabled(self) -> bool:
        return self.caf_mode != "off"


# The record types LangGraph's checkpointer may rebuild from its store (its serializer asks for
# an allowlist).
CHECKPOINT_TYPES: tuple[type, ...] = (
    InputScreen, CrisisMark, PendingWarning, NodeRun, TurnTrace, ModelCall, Candidate, Identification,
    CafReport, Judgement,
)
