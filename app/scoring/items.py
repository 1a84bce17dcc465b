"""Items to score, made from a drift run or from saved chats: each final answer as the user saw it,
with the conversation before it and the text of every source it cites, frozen at import.

The sources are read from the answer itself. A turn's recorded citations are the draft's: when the
filter sends a card or the extractive answer instead (its fallback), or rewrites the draft, the
answer the user saw cites other sources, or some where the draft cited none."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path

from app.core.errors import ConfigError
from app.core.text import citations_in
from app.drift.runner import DriftTurn
from app.drift.summary import load_run
from app.kb.loader import KnowledgeBase
from app.store import CitedSource, Exchange, Item, TurnLog


def item_id(collection: str, thread_id: str, turn: int) -> str:
    """Stable, and says nothing about the condition or the role: raters see only this."""
    return "it-" + hashlib.sha256(f"{collection}\0{thread_id}\0{turn}".encode()).hexdigest()[:10]


def items_from_run(run: Path, kb: KnowledgeBase) -> list[Item]:
    manifest, records = load_run(run)
    branches: dict[tuple[str, int, str], list[DriftTurn]] = defaultdict(list)
    for record in records:
        branches[(record.role, record.sample, record.condition)].append(record)
    items = []
    for records in branches.values():
        records.sort(key=lambda r: r.turn)
        context = [Exchange(user=e.user, assistant=e.assistant or "")
                   for e in manifest.checkpoint_conversations.get(records[0].role, [])]
        for record in records:
            items.append(Item(
                item_id=item_id(manifest.run_id, record.thread_id, record.turn), collection=manifest.run_id,
                question=record.user_message, answer=record.final_answer, context=list(context),
                sources=cited_sources(citations_in(record.final_answer), kb),
                hidden={"run": manifest.run_id, "role": record.role, "kind": record.kind,
                        "condition": record.condition, "sample": record.sample, "turn": record.turn,
                        "model": record.chat_model or manifest.models.get("chat", ""), "route": record.route,
                        "thread_id": record.thread_id}))
            context.append(Exchange(user=record.user_message, assistant=record.final_answer))
    return items


def items_from_chats(turn_log: TurnLog, thread_ids: list[str], collection: str, kb: KnowledgeBase) -> list[Item]:
    """Every turn of the given saved conversations (forks keep their copied history as context)."""
    items = []
    for thread_id in thread_ids:
        conversation = turn_log.conversation(thread_id)
        if conversation is None:
            raise ConfigError(f"no saved conversation {thread_id}; `cafbot conversations list` shows them.")
        context: list[Exchange] = []
        for trace in turn_log.turns(thread_id):
            items.append(Item(
                item_id=item_id(collection, thread_id, trace.turn), collection=collection,
                question=trace.user_message, answer=trace.answer, context=list(context),
                sources=cited_sources(citations_in(trace.answer), kb),
                hidden={"run": collection, "condition": trace.caf_mode, "turn": trace.turn, "route": trace.route,
                        "model": trace.generator or "", "thread_id": thread_id}))
            context.append(Exchange(user=trace.user_message, assistant=trace.answer))
    return items


def cited_sources(ids: list[str], kb: KnowledgeBase) -> list[CitedSource]:
    """The cited sources' text now; a source no longer in the knowledge base is named as such."""
    found = []
    for source_id in dict.fromkeys(ids):
        source = kb.get(source_id)
        found.append(CitedSource(id=source_id, title=source.title, text=source.body) if source else
                     CitedSource(id=source_id, title="(not in the knowledge base any more)", text=""))
    return found
