"""The input screen's second look by a screener LLM. It reads a message tier 0 was unsure about:
one it did not call a crisis but came close, which the LLM may call a crisis; and one only the
learned layer called a crisis, below its confident line, which the LLM may clear. A crisis found
by a language or pattern hit, or by the learned layer with confidence, is never cleared."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.core.models import Deadline, RoleClient
from app.core.records import ModelCall
from judges.screener_call import ask_about_message
from screening.crisis import Assessment


class CrisisVerdict(BaseModel):
    crisis: bool = Field(description="true if someone may be in danger now")
    reason: str = Field(default="", description="one short sentence")


def needs_second_look(tier0: Assessment, mode: str) -> bool:
    """"uncertain": tier 0 came close to a crisis, or only its learned layer saw one, unsure;
    "always": also every message tier 0 did not call a crisis."""
    if mode == "off" or (tier0.crisis and not tier0.clearable):
        return False
    return tier0.crisis or tier0.uncertain or mode == "always"


def second_look(client: RoleClient, text: str,
                deadline: Deadline | None = None) -> tuple[bool, str, ModelCall | None]:
    """(crisis?, reason, the call). A failed call keeps tier 0's answer and says so in the reason."""
    verdict, failure, call = ask_about_message(client, CrisisVerdict, "crisis_screen.md", text,
                                               "tier1:crisis_input", deadline)
    if verdict is None:
        return False, f"crisis screen failed ({failure}); tier 0's answer stands", call
    return verdict.crisis, verdict.reason, call
