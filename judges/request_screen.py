"""The input screen's second look at a message its learned layer was unsure about: does it ask
about a particular person's own case (a boundary reply) or what is generally true (an answer)?
Requests about a named relative's case are the learned layer's weakest kind, and its misses there
and its false alarms on general questions framed by a relative sit near its threshold."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.core.models import Deadline, RoleClient
from app.core.records import ModelCall
from judges.screener_call import ask_about_message
from screening.crisis import Assessment


class RequestVerdict(BaseModel):
    own_case: bool = Field(description="true if it asks for a decision or judgement about one particular person's case")
    reason: str = Field(default="", description="one short sentence")


def needs_request_look(tier0: Assessment, mode: str) -> bool:
    """"uncertain": the learned layer's request probability was near its threshold, either side."""
    return mode != "off" and not tier0.crisis and tier0.personal_unsure


def request_look(client: RoleClient, text: str,
                 deadline: Deadline | None = None) -> tuple[bool | None, str, ModelCall | None]:
    """(about one person's own case?, reason, the call); None for a failed call, whose reason says
    that tier 0's reading stands."""
    verdict, failure, call = ask_about_message(client, RequestVerdict, "request_screen.md", text,
                                               "tier1:request_input", deadline)
    if verdict is None:
        return None, f"request screen failed ({failure}); tier 0's reading stands", call
    return verdict.own_case, verdict.reason, call
