"""The store's database: SQLite in the data dir by default, any SQLAlchemy URL (Postgres for
teams) by configuration. Schema changes are numbered migrations, applied in order at open and
recorded in `schema_version`; a migration is never edited once released, only followed by another.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import DatabaseError, OperationalError

from app.core.errors import CafbotError
from app.core.files import private_sqlite


class StoreError(CafbotError):
    """The store cannot be opened or read; the message names the database and the fix."""


def _m1_conversations_and_turns(db: Connection) -> None:
    db.execute(text("""
        CREATE TABLE conversations (
            thread_id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            caf_mode TEXT NOT NULL,
            label TEXT NOT NULL DEFAULT '',
            parent_thread_id TEXT,          -- a fork's origin (drift tests branch from checkpoints)
            forked_at_turn INTEGER,
            metadata TEXT NOT NULL DEFAULT '{}'
        )"""))
    db.execute(text("""
        CREATE TABLE turns (
            thread_id TEXT NOT NULL REFERENCES conversations(thread_id) ON DELETE CASCADE,
            turn INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            route TEXT NOT NULL,
            caf_mode TEXT NOT NULL,
            user_message TEXT NOT NULL,
            answer TEXT NOT NULL,
            trace TEXT NOT NULL,
            PRIMARY KEY (thread_id, turn)   -- append-only: a turn is written once
        )"""))


def _m2_turn_feedback(db: Connection) -> None:
    # "Was this helpful?" lives with the turn it rates, so deleting a conversation removes it too.
    db.execute(text("ALTER TABLE turns ADD COLUMN feedback TEXT"))


MIGRATIONS: list[Callable[[Connection], None]] = [_m1_conversations_and_turns, _m2_turn_feedback]


class Database:
    def __init__(self, url: str):
        self.url = url
        self._where = url.removeprefix("sqlite:///")
        try:
            self.engine = _engine(url)
            self._migrate()
        except (DatabaseError, OperationalError) as error:
            raise StoreError(
                f"{self._where}: cannot open the store ({_first_line(error)}). If the file is damaged, "
                "move it aside and run the command again: a new, empty store is created.") from error

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> Database:
        """`store.sqlite` in `data_dir`: the folder 0700, the database and its WAL files 0600."""
        return cls(f"sqlite:///{private_sqlite(data_dir / 'store.sqlite')}")

    @property
    def version(self) -> int:
        with self.engine.connect() as db:
            return int(db.execute(text("SELECT max(version) FROM schema_version")).scalar() or 0)

    def _migrate(self) -> None:
        with self.engine.begin() as db:
            db.execute(text("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY)"))
            current = int(db.execute(text("SELECT max(version) FROM schema_version")).scalar() or 0)
            if current > len(MIGRATIONS):
                raise StoreError(f"{self._where}: the store is at schema version {current}, newer than "
                                 f"this cafbot ({len(MIGRATIONS)}); upgrade cafbot to open it.")
            for number, migration in enumerate(MIGRATIONS[current:], start=current + 1):
                migration(db)
                db.execute(text("INSERT INTO schema_version (version) VALUES (:v)"), {"v": number})

    def close(self) -> None:
        self.engine.dispose()


def _engine(url: str) -> Engine:
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def _first_line(error: Exception) -> str:
    return str(getattr(error, "orig", error)).strip().splitlines()[0][:200]
