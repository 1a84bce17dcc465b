"""The turn log: one row per conversation and per turn, with the full trace as JSON. Drift runs,
the CAF on/off comparison and the scoring workspace read it; the app lists and deletes from it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import Field
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from app.core.errors import CafbotError
from app.core.privacy import mask, mask_record
from app.core.records import CafMode, Record, TurnTrace, utc_now
from app.store.database import Database

_INSERT_TURN = text("""
    INSERT INTO turns (thread_id, turn, created_at, route, caf_mode, user_message, answer, trace)
    VALUES (:thread_id, :turn, :created_at, :route, :caf_mode, :user, :answer, :trace)""")


class TurnConflict(CafbotError):
    """A turn with this number is already recorded: two writers raced on one conversation."""


class Conversation(Record):
    thread_id: str
    created_at: str
    caf_mode: str
    label: str = ""
    parent_thread_id: str | None = None
    forked_at_turn: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    turns: int = 0
    last_turn_at: str | None = None

    @property
    def last_activity(self) -> datetime:
        """When the conversation last changed: its last turn, or else its creation (UTC)."""
        when = datetime.fromisoformat(self.last_turn_at or self.created_at)
        return when if when.tzinfo else when.replace(tzinfo=UTC)


class Feedback(Record):
    """A reader's "was this helpful?" on one answer, with an optional comment."""

    helpful: bool
    comment: str = ""
    at: str = Field(default_factory=utc_now)


class TurnLog:
    def __init__(self, db: Database):
        self.db = db

    def start_conversation(self, thread_id: str, *, caf_mode: CafMode = "on", label: str = "",
                           parent_thread_id: str | None = None, forked_at_turn: int | None = None,
                           metadata: dict[str, Any] | None = None) -> None:
        """Record a conversation once; later calls for the same thread change nothing."""
        with self.db.engine.begin() as db:
            db.execute(text("""
                INSERT INTO conversations (thread_id, created_at, caf_mode, label, parent_thread_id,
                                           forked_at_turn, metadata)
                VALUES (:thread_id, :created_at, :caf_mode, :label, :parent, :forked_at, :metadata)
                ON CONFLICT (thread_id) DO NOTHING"""),
                dict(thread_id=thread_id, created_at=utc_now(), caf_mode=caf_mode, label=label,
                     parent=parent_thread_id, forked_at=forked_at_turn, metadata=json.dumps(metadata or {})))

    def record(self, trace: TurnTrace) -> None:
        """Append one turn. Raises TurnConflict if that turn number is already recorded.
        E-mail addresses and phone numbers are masked in everything stored (the message, the
        answer, the draft and every other free text of the trace); the conversation itself, in
        the checkpointer, keeps the user's words."""
        trace = mask_record(trace)
        try:
            with self.db.engine.begin() as db:
                db.execute(_INSERT_TURN, dict(
                    thread_id=trace.thread_id, turn=trace.turn, created_at=trace.started_at, route=trace.route,
                    caf_mode=trace.caf_mode, user=trace.user_message, answer=trace.answer,
                    trace=trace.model_dump_json()))
        except IntegrityError as error:
            raise TurnConflict(f"turn {trace.turn} of conversation {trace.thread_id} is already "
                               "recorded; another process answered in this conversation at the same time") from error

    def remove_turn(self, thread_id: str, turn: int) -> None:
        """Take back a turn whose conversation state could not be saved, so the two stores agree."""
        with self.db.engine.begin() as db:
            db.execute(text("DELETE FROM turns WHERE thread_id = :t AND turn = :n"), {"t": thread_id, "n": turn})

    def turns(self, thread_id: str, *, upto: int | None = None) -> list[TurnTrace]:
        with self.db.engine.connect() as db:
            rows = db.execute(text("""
                SELECT trace FROM turns WHERE thread_id = :t AND (CAST(:upto AS INTEGER) IS NULL OR turn <= :upto)
                ORDER BY turn"""), {"t": thread_id, "upto": upto}).all()
        return [TurnTrace.model_validate_json(row[0]) for row in rows]

    def save_feedback(self, thread_id: str, turn: int, feedback: Feedback) -> None:
        """Rate one recorded turn (a later rating replaces an earlier one). Contact details in the
        comment are masked, as everywhere in the log."""
        feedback = feedback.model_copy(update={"comment": mask(feedback.comment.strip())})
        with self.db.engine.begin() as db:
            updated = db.execute(text("UPDATE turns SET feedback = :f WHERE thread_id = :t AND turn = :n"),
                                 {"f": feedback.model_dump_json(), "t": thread_id, "n": turn})
        if not updated.rowcount:
            raise CafbotError(f"conversation {thread_id} has no turn {turn} to rate")

    def feedback(self, thread_id: str) -> dict[int, Feedback]:
        """The ratings given in one conversation, by turn."""
        with self.db.engine.connect() as db:
            rows = db.execute(text("SELECT turn, feedback FROM turns WHERE thread_id = :t AND feedback IS NOT NULL"),
                              {"t": thread_id}).all()
        return {row[0]: Feedback.model_validate_json(row[1]) for row in rows}

    def conversation(self, thread_id: str) -> Conversation | None:
        found = self._conversations("WHERE c.thread_id = :t", {"t": thread_id})
        return found[0] if found else None

    def conversations(self, *, limit: int | None = None) -> list[Conversation]:
        """Newest activity first."""
        return self._conversations("", {}, limit=limit)

    def _conversations(self, where: str, params: dict[str, Any], limit: int | None = None) -> list[Conversation]:
        query = f"""
            SELECT c.thread_id, c.created_at, c.caf_mode, c.label, c.parent_thread_id, c.forked_at_turn,
                   c.metadata, count(t.turn), max(t.created_at)
            FROM conversations c LEFT JOIN turns t ON t.thread_id = c.thread_id {where}
            GROUP BY c.thread_id ORDER BY coalesce(max(t.created_at), c.created_at) DESC"""
        if limit is not None:
            query += " LIMIT :limit"
            params = {**params, "limit": limit}
        with self.db.engine.connect() as db:
            rows = db.execute(text(query), params).all()
        return [Conversation(thread_id=r[0], created_at=r[1], caf_mode=r[2], label=r[3], parent_thread_id=r[4],
                             forked_at_turn=r[5], metadata=json.loads(r[6]), turns=r[7], last_turn_at=r[8])
                for r in rows]

    def copy_turns(self, source: str, target: str, *, upto: int) -> None:
        """A fork's history: the source's turns up to `upto`, under the new thread, in one
        transaction (stored masked already, so copied as they are)."""
        with self.db.engine.begin() as db:
            rows = db.execute(text("""
                SELECT turn, created_at, route, caf_mode, user_message, answer, trace FROM turns
                WHERE thread_id = :s AND turn <= :upto ORDER BY turn"""), {"s": source, "upto": upto}).all()
            if rows:
                db.execute(_INSERT_TURN, [
                    dict(thread_id=target, turn=r[0], created_at=r[1], route=r[2], caf_mode=r[3], user=r[4],
                         answer=r[5], trace=json.dumps({**json.loads(r[6]), "thread_id": target})) for r in rows])

    def delete(self, thread_id: str) -> bool:
        """Remove a conversation and its turns; False if there was none."""
        with self.db.engine.begin() as db:
            db.execute(text("DELETE FROM turns WHERE thread_id = :t"), {"t": thread_id})
            deleted = db.execute(text("DELETE FROM conversations WHERE thread_id = :t"), {"t": thread_id})
        return bool(deleted.rowcount)
