"""The answer graph's state and its per-turn context.

`ChatInput` is all a caller sends; `ChatState` is what the graph keeps per conversation thread and
what LangGraph's checkpointer persists; `TurnContext` is chosen per call (LangGraph's runtime
context) and never persisted, so one chatbot can run the same thread with the filter on or off.
The records inside the state (`TurnTrace` and its parts) are defined in `app.core.records`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from app.core.records import (
    CafMode,
    Candidate,
    Identification,
    InputScreen,
    PendingWarning,
    TurnTrace,
)


@dataclass(frozen=True)
class TurnContext:
    caf: CafMode = "on"


class ChatInput(TypedDict):
    user_input: str


class ChatState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]  # the conversation as the user saw it
    user_input: str
    turn: int
    screen: InputScreen
    identification: Identification | None
    card: str | None  # the vetted answer card this turn's question matched (its id)
    card_confident: bool  # delivered as the draft; otherwise only the fallback for an LLM draft
    sources_in_play: dict[str, int]  # source id -> the last turn that used it
    # What the conversation is about: the last question that stood on its own, then the latest
    # follow-up read with it ("what is family intervention?", "how long does it go on for?").
    topic: list[str]
    # What this turn answers, in words: the message, a model's rewrite that stands alone, or, after
    # "tell me more" or a "did you mean" choice, the question that led there.
    question: str
    prompt: list[AnyMessage]  # this turn's enhanced prompt for the chat model
    prompt_source_ids: list[str]
    draft: str
    answer: str
    warnings: list[PendingWarning]
    clarify_candidates: list[Candidate]  # offered with "did you mean …?", for the next turn
    trace: TurnTrace
