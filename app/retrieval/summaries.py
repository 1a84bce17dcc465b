"""The summary-based strategy (the original design): an LLM reads every source's id, title and
summary and names the sources that answer the question, each with a confidence.

Used when `retrieval.strategy` is "summaries" or "both" and a screener (or, failing that, chat)
model is configured; without one the caller simply relies on retrieval.
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import Field

from app.core.models import RoleClient, call_structured
from app.core.records import ModelCall, Record
from app.kb.loader import KnowledgeBase

_INSTRUCTIONS = """You route questions to the sources of a patient-education knowledge base.
Below is every source: its id, title and summary. Name the sources whose content answers the
question, best first, each with your confidence from 0 to 1 that it answers it. If the question has
several parts, choose sources for each part. If no source covers the question, return an empty
list: do not guess. Use only ids from the list.

Sources:
{catalogue}"""


class ChosenSource(Record):
    source_id: str = Field(description="the id of a source from the list, e.g. S07")
    confidence: float = Field(ge=0.0, le=1.0, description="0 to 1: how sure it answers the question")


class SourceChoice(Record):
    """The sources that answer the question, best first; empty when none does."""

    sources: list[ChosenSource] = Field(default_factory=list)


class SummaryChooser:
    def __init__(self, client: RoleClient, kb: KnowledgeBase):
        self.client = client
        self.kb = kb
        catalogue = "\n".join(f"- {s.id}: {s.title}. {' '.join(s.summary.split())}" for s in kb)
        self._system = _INSTRUCTIONS.format(catalogue=catalogue)

    def choose(self, question: str) -> tuple[dict[str, float], ModelCall]:
        """Confidence by source id (ids the knowledge base does not have are dropped).
        Raises ModelError when the model fails."""
        messages = [SystemMessage(self._system), HumanMessage(f"Question: {question}")]
        choice, call = call_structured(self.client, SourceChoice, messages, purpose="choose_sources")
        chosen: dict[str, float] = {}
        for item in choice.sources:
            if item.source_id in self.kb and item.source_id not in chosen:
                chosen[item.source_id] = item.confidence
        return chosen, call
