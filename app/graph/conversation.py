"""The conversation as the graph's nodes read it: what was said by whom, the message this turn
brings, what a turn adds, the answer to our own "did you mean …?", and what the judges see."""

from __future__ import annotations

import re

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage

from app.core.records import Candidate, CrisisMark, InputScreen, Turn
from app.core.text import split_sentences
from app.graph.services import Services
from app.graph.state import ChatState
from app.kb.cards import AnswerCard
from judges.schema import DraftContext
from screening.crisis import HISTORY_TURNS, read_alone

_CHOICE = re.compile(r"^\s*(?:option\s*|number\s*|#)?([1-9])\b", re.IGNORECASE)
_YES = re.compile(r"^\s*(yes|yeah|yep|yup|y|ok|okay|sure|that one|the first( one)?)\b", re.IGNORECASE)


def said(state: ChatState, kind: type[HumanMessage] | type[AIMessage]) -> list[str]:
    """What the user (`HumanMessage`) or the bot (`AIMessage`) said so far, oldest first."""
    return [str(m.content) for m in state.get("messages", []) if isinstance(m, kind)]


def last_user_message(state: ChatState) -> str | None:
    humans = said(state, HumanMessage)
    return humans[-1] if humans else None


def asked(state: ChatState) -> set[str]:
    """What the user has said in this conversation, lower-cased: questions not to offer again."""
    return {m.lower() for m in said(state, HumanMessage)}


def delivered(card: AnswerCard, state: ChatState) -> bool:
    """The card's answer was given earlier in this conversation (every sentence of it is in one
    earlier reply, in whatever order it was delivered)."""
    sentences = split_sentences(card.body)
    return any(all(s in answer for s in sentences) for answer in said(state, AIMessage))


def recent_crises(state: ChatState, services: Services, *, before: int) -> list[CrisisMark]:
    """The crises the screen read in the last few turns before turn `before`, oldest first: their
    answers keep the contacts. Read as the screen read them, with the messages before: a danger
    seen only in context is not there when its message is read again alone. A conversation saved
    before the marks were kept has its last messages read again, each alone."""
    if "crises" not in state:
        readings = read_alone(said(state, HumanMessage), services.resources)
        marks = [CrisisMark(turn=before - len(readings) + n, kind=found.crisis_kind, evidence=found.evidence)
                 for n, found in enumerate(readings) if found.crisis]
    else:
        marks = state["crises"]
    return [m for m in marks if before - HISTORY_TURNS <= m.turn < before]


def crises_with(crises: list[CrisisMark], turn: int, screen: InputScreen) -> list[CrisisMark]:
    """The recent crises and this turn's, if the screen read it as one (the turn after a crisis
    that only stays on its route is that crisis, not a new one)."""
    if screen.route == "crisis" and screen.crisis_layer != "conversation":
        return [*crises, CrisisMark(turn=turn, kind=screen.crisis_kind, evidence=screen.crisis_evidence)]
    return crises


def resolve_clarification(text: str, offered: list[Candidate]) -> Candidate | None:
    """After "did you mean …?", a reply of "2", "yes" or a title picks that candidate."""
    if not offered:
        return None
    if match := _CHOICE.match(text):
        index = int(match.group(1)) - 1
        return offered[index] if index < len(offered) else None
    if _YES.match(text) and len(text.split()) <= 4:
        return offered[0]
    lowered = text.lower().strip(" ?.!")
    return next((c for c in offered if lowered and lowered in c.title.lower()), None)


def exchange_messages(user: str, answer: str, message_id: str | None = None) -> list[AnyMessage]:
    """What a turn adds to the conversation (its cleaned message, under the id the client gave it,
    and the answer delivered): an empty message leaves the conversation as it was."""
    return [HumanMessage(user, id=message_id), AIMessage(answer)] if user else []


def incoming(state: ChatState) -> tuple[ChatState, str, dict]:
    """This turn's message, and the state as the nodes read it, the conversation before this turn.

    The message is the last of `messages` when that is the user's (LangGraph's usual input; a turn
    always ends with the answer, so it can only be this turn's), else `user_input`. It is taken out
    of the conversation until `respond` puts its cleaned copy back, so every node reads the
    conversation as in-process turns give it. Returns the state without it, its text, and the
    update that takes it out and empties `user_input`."""
    messages = list(state.get("messages") or [])
    if messages and isinstance(messages[-1], HumanMessage):
        message = messages.pop()
        return ({**state, "messages": messages}, str(message.text),
                {"messages": [RemoveMessage(id=message.id)], "message_id": message.id, "user_input": ""})
    return state, state.get("user_input", ""), {"message_id": None, "user_input": ""}


def conversation_turns(messages: list[AnyMessage], last: int = 6) -> list[Turn]:
    """The conversation's last messages as the user saw them (what the judges see of it)."""
    return [Turn(role="user" if isinstance(m, HumanMessage) else "assistant", content=str(m.content))
            for m in messages[-last:]]


def draft_context(state: ChatState, services: Services) -> DraftContext:
    """What the judges see of this turn: the message, the draft, the sources given, recent turns."""
    sources = [d for sid in state.get("prompt_source_ids") or [] if (d := services.source_text(sid))]
    crises = recent_crises(state, services, before=state["turn"])
    return DraftContext(user=state["screen"].text, draft=state["draft"], sources=sources,
                        history=conversation_turns(state.get("messages", [])),
                        crisis_before=[s for mark in crises for s in mark.evidence],
                        crisis_cleared=state["screen"].crisis_cleared)
