"""The turn log: one row per conversation and per turn, with the full trace as JSON.

LangGraph's checkpoints hold the graph's state for resuming; this log is what people read and
score: drift runs, the CAF on/off comparison and the scoring workspace query it. Schema changes are
numbered migrations, applied in order and recorded in SQLite's `user_version`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.graph.state import TurnTrace


def _m1_conversations_and_turns(db: sqlite3.Connection) -> None:
    db.executescript(
        """
        CREATE TABLE conversations (
            thread_id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            caf_enabled INTEGER NOT NULL,
            label TEXT NOT NULL DEFAULT '',
            parent_thread_id TEXT,          -- a branch's origin (drift tests branch from checkpoints)
            metadata TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE turns (
            thread_id TEXT NOT NULL REFERENCES conversations(thread_id),
            turn INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            route TEXT NOT NULL,
            user_message TEXT NOT NULL,
            answer TEXT NOT NULL,
            trace TEXT NOT NULL,
            PRIMARY KEY (thread_id, turn)
        );
        """
    )


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_m1_conversations_and_turns]


class TurnLog:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._lock = threading.Lock()
        self._migrate()

    def _migrate(self) -> None:
        with self._lock, self._db:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                migration(self._db)
                self._db.execute(f"PRAGMA user_version = {number}")

    def start_conversation(self, thread_id: str, *, caf_enabled: bool, label: str = "",
                           parent_thread_id: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO conversations VALUES (?, ?, ?, ?, ?, ?)",
                (thread_id, _now(), int(caf_enabled), label, parent_thread_id, json.dumps(metadata or {})),
            )

    def record(self, trace: TurnTrace) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO turns VALUES (?, ?, ?, ?, ?, ?, ?)",
                (trace.thread_id, trace.turn, trace.started_at, trace.route, trace.user_message,
                 trace.answer, trace.model_dump_json()),
            )

    def turns(self, thread_id: str) -> list[TurnTrace]:
        with self._lock:
            rows = self._db.execute(
                "SELECT trace FROM turns WHERE thread_id = ? ORDER BY turn", (thread_id,)
            ).fetchall()
        return [TurnTrace.model_validate_json(row[0]) for row in rows]

    def close(self) -> None:
        self._db.close()


def _now() -> str:
    return datetime.now(UTC).isoformat()
