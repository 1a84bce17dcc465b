"""With a chat model configured, a message in a conversation is first rewritten as a question
that stands alone (LangChain's history-aware retriever calls this "contextualising" the
question): "is it free?" after talk of family intervention becomes "Is family intervention
free?". Retrieval then reads the rewritten question; the offline resolver (`references`, and the
identifier's reading with the conversation's topic) stays the fallback when the model fails or
answers with something that is not a rewrite of the message."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from app.core.errors import ModelError
from app.core.models import Deadline, RoleClient, call_text
from app.core.records import ModelCall, Turn
from app.prompts import template

_PREFIXES = ("standalone question:", "rewritten message:", "rewritten question:", "question:")


def condense(client: RoleClient, history: list[Turn], message: str, *, max_turns: int = 4,
             deadline: Deadline | None = None) -> tuple[str | None, ModelCall | None]:
    """(the message as a question that stands alone, the call); None for the question when the
    model failed or its answer is not usable, and the caller keeps the offline reading."""
    recent = history[-2 * max_turns:]
    conversation = "\n".join(f"{turn.role.capitalize()}: {_one_line(turn.content, 400)}" for turn in recent)
    prompt = template("condense").format(conversation=conversation, message=message)
    try:
        text, call = call_text(client, [HumanMessage(prompt)], purpose="condense", deadline=deadline)
    except ModelError as error:
        return None, error.call
    rewritten = usable_rewrite(text, message)
    if rewritten is None:
        call.error = "the rewrite was not usable; the message was read as written"
    return rewritten, call


def usable_rewrite(text: str, message: str) -> str | None:
    """The model's rewrite, cleaned, if it can stand for the message: one line, not empty, not
    many times longer than the message (a model that answers instead of rewriting)."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    lowered = line.lower()
    for prefix in _PREFIXES:
        if lowered.startswith(prefix):
            line = line[len(prefix):].strip()
            break
    line = line.strip("\"'“”` ")
    if not line or len(line) > 3 * len(message) + 120:
        return None
    return line


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
