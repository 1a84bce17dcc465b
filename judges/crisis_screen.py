"""The input screen's second look: when tier 0 did not call a message a crisis but is not sure, a
screener LLM reads it. Recall first: the LLM can add a crisis, never remove one that tier 0 found."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from app.core.errors import ModelError
from app.core.models import Deadline, RoleClient, call_structured
from app.core.records import ModelCall
from judges.local import patterns
from judges.schema import Finding

PROMPT = Path(__file__).with_name("prompts") / "crisis_screen.md"


class CrisisVerdict(BaseModel):
    crisis: bool = Field(description="true if someone may be in danger now")
    reason: str = Field(default="", description="one short sentence")


@cache
def _prompt() -> str:
    return PROMPT.read_text(encoding="utf-8")


def needs_second_look(tier0: Finding, mode: str) -> bool:
    """"uncertain": tier 0 saw some risk (a score) without calling it a crisis."""
    if tier0.flagged or mode == "off":
        return False
    return mode == "always" or tier0.score >= patterns.threshold("crisis", "llm_second_look")


def second_look(client: RoleClient, text: str,
                deadline: Deadline | None = None) -> tuple[bool, str, ModelCall | None]:
    """(crisis?, reason, the call). A failed call keeps tier 0's answer and says so in the reason."""
    try:
        verdict, call = call_structured(
            client, CrisisVerdict, [SystemMessage(_prompt()), HumanMessage(f"Message:\n<<<\n{text}\n>>>")],
            purpose="tier1:crisis_input", deadline=deadline)
    except ModelError as error:
        return False, f"crisis screen failed ({error.reason}); tier 0's answer stands", error.call
    return verdict.crisis, verdict.reason, call
