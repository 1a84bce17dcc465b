"""The answer graph's state and its per-turn context.

`ChatInput` is all a caller sends; `ChatState` is what the graph keeps per conversation thread and
what LangGraph's checkpointer persists; `TurnContext` is chosen per call (LangGraph's runtime
context) and never persisted, so one chatbot can run the same thread with the filter on or off.
The records inside the state (`TurnTrace` and its parts) are defined in `app.core.records`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, get_args

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

# typing_extensions' TypedDict: on Python 3.11 pydantic draws the JSON schemas that LangGraph's
# server and Studio show only from this one.
from typing_extensions import TypedDict

from app.core.records import (
    CafMode,
    Candidate,
    CrisisMark,
    Identification,
    InputScreen,
    PendingWarning,
    TurnTrace,
)


@dataclass(frozen=True)
class TurnContext:
    caf: CafMode = "on"

    def __post_init__(self) -> None:
        # LangGraph's server builds this from a request's `context`: a mistyped mode is an error,
        # not a turn answered with some other filter.
        if self.caf not in get_args(CafMode):
            raise ValueError(f"caf must be one of {', '.join(get_args(CafMode))}, not {self.caf!r}")


class ChatInput(TypedDict, total=False):
    """The message, as `user_input` or as the last of `messages` (LangGraph's usual input,
    `{"messages": [{"role": "user", "content": …}]}`, which its clients and Studio send)."""

    user_input: str
    messages: Annotated[list[AnyMessage], add_messages]


class ChatState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]  # the conversation as the user saw it
    user_input: str  # emptied once read, so that a later turn sent as `messages` never reads it again
    # The id a client gave this turn's message in `messages`: the cleaned copy the conversation
    # keeps has the same id, so the client's own copy is replaced, not shown twice.
    message_id: str | None
    turn: int
    screen: InputScreen
    # The recent turns the screen read as crises, oldest first. Absent in conversations saved
    # before it was kept: their earlier messages are read again instead.
    crises: list[CrisisMark]
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
