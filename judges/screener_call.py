"""One call to the screener LLM about a user message, as the input screen's second looks make
it: a fixed system prompt, the message fenced off, a structured verdict back."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TypeVar

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from app.core.errors import ModelError
from app.core.models import Deadline, RoleClient, call_structured
from app.core.records import ModelCall

PROMPTS = Path(__file__).with_name("prompts")
Verdict = TypeVar("Verdict", bound=BaseModel)


@cache
def _prompt(name: str) -> str:
    return (PROMPTS / name).read_text(encoding="utf-8")


def ask_about_message(client: RoleClient, schema: type[Verdict], prompt: str, text: str, purpose: str,
                      deadline: Deadline | None = None) -> tuple[Verdict | None, str, ModelCall | None]:
    """(the verdict, or None with why the call failed; the call). `prompt`: a file in judges/prompts."""
    try:
        verdict, call = call_structured(
            client, schema, [SystemMessage(_prompt(prompt)), HumanMessage(f"Message:\n<<<\n{text}\n>>>")],
            purpose=purpose, deadline=deadline)
    except ModelError as error:
        return None, error.reason, error.call
    return verdict, "", call
