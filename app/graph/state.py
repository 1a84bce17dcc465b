"""The answer graph's state and the per-turn trace.

`ChatInput` is all a caller sends; `ChatState` is what the graph keeps per conversation thread and
what LangGraph's checkpointer persists. Values are pydantic models so the trace, the drift tests
and the scoring workspace all read one typed record of each turn (`TurnTrace`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import BaseModel, ConfigDict, Field

from app.models.calls import ModelCall
from app.retrieval import Candidate, Identification
from judges.schema import CafReport, Judgement

Route = Literal["answer", "crisis", "clarify", "no_match", "notice"]
Generator = Literal["llm", "extractive", "fixed"]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputScreen(Record):
    """The user's message after normalisation, and where it should go."""

    text: str
    route: Literal["answer", "crisis", "notice"] = "answer"
    notices: list[str] = Field(default_factory=list)  # told to the user: trimmed, language…
    reply: str | None = None  # for route "notice": the whole reply (empty message, say)
    crisis_score: float = 0.0
    crisis_evidence: list[str] = Field(default_factory=list)


class PendingWarning(Record):
    """A judge's warning, shown to the chatbot on the next turns until it expires."""

    judge: str
    rule: str
    message: str
    issued_turn: int
    expires_after_turn: int

    def active_at(self, turn: int) -> bool:
        return self.issued_turn < turn <= self.expires_after_turn


class NodeRun(Record):
    node: str
    latency_ms: float
    note: str = ""


class TurnTrace(Record):
    """Everything that happened in one turn: the record drift tests and scoring read."""

    thread_id: str = ""
    turn: int = 0
    started_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())
    user_message: str = ""
    route: Route = "answer"
    notices: list[str] = Field(default_factory=list)
    identification: Identification | None = None
    prompt_sources: list[str] = Field(default_factory=list)
    dropped_sources: list[str] = Field(default_factory=list)
    warnings_in_prompt: list[str] = Field(default_factory=list)
    generator: Generator | None = None
    draft: str | None = None
    answer: str = ""
    citations: list[str] = Field(default_factory=list)
    invalid_citations: list[str] = Field(default_factory=list)
    caf: CafReport | None = None  # what the Critical Analysis Filter did this turn
    caf_enabled: bool = True
    fallback_used: bool = False
    errors: list[str] = Field(default_factory=list)
    nodes: list[NodeRun] = Field(default_factory=list)
    model_calls: list[ModelCall] = Field(default_factory=list)

    @property
    def total_ms(self) -> float:
        return sum(n.latency_ms for n in self.nodes)


class ChatInput(TypedDict):
    user_input: str


class ChatState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]  # the conversation as the user saw it
    user_input: str
    turn: int
    screen: InputScreen
    identification: Identification | None
    sources_in_play: dict[str, int]  # source id -> the last turn that used it
    prompt: list[AnyMessage]  # this turn's enhanced prompt for the chat model
    prompt_source_ids: list[str]
    draft: str
    answer: str
    warnings: list[PendingWarning]
    clarify_candidates: list[Candidate]  # offered with "did you mean …?", for the next turn
    trace: TurnTrace


# The types the checkpointer may rebuild from SQLite (LangGraph's serializer asks for an allowlist).
CHECKPOINT_TYPES: tuple[type, ...] = (
    InputScreen, PendingWarning, NodeRun, TurnTrace, ModelCall, Candidate, Identification,
    CafReport, Judgement,
)
