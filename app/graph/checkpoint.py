"""Where conversations persist: LangGraph's SQLite checkpointer (a thread per conversation), or
Postgres for deployments. A restart opens the same file and the threads resume."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from app.core.config import Settings
from app.core.errors import ConfigError
from app.core.files import private_sqlite
from app.core.records import CHECKPOINT_TYPES
from app.store import StoreError


def serializer() -> JsonPlusSerializer:
    # An explicit allowlist: the checkpointer rebuilds only our own state types (and LangChain's
    # messages), never arbitrary classes named in the database.
    return JsonPlusSerializer(allowed_msgpack_modules=list(CHECKPOINT_TYPES))


@contextmanager
def open_checkpointer(settings: Settings) -> Iterator[BaseCheckpointSaver]:
    if settings.checkpointer.kind == "postgres":
        with _postgres(settings) as saver:
            yield saver
        return

    # The data dir 0700 and the file 0600 before SQLite opens it (its WAL files copy that mode).
    private_sqlite(settings.checkpoint_path)
    # One connection shared by the CLI's or the app's threads; SqliteSaver serialises access.
    try:
        conn = sqlite3.connect(settings.checkpoint_path, check_same_thread=False)
    except sqlite3.DatabaseError as error:
        raise unreadable_store(settings.checkpoint_path, error) from error
    try:
        saver = _named_sqlite_saver()(conn, serde=serializer())
        saver.path = settings.checkpoint_path
        try:
            saver.setup()
        except sqlite3.DatabaseError as error:
            raise unreadable_store(settings.checkpoint_path, error) from error
        yield saver
    finally:
        conn.close()


@functools.cache
def _named_sqlite_saver() -> type[BaseCheckpointSaver]:
    from langgraph.checkpoint.sqlite import SqliteSaver  # on first use, as before

    class NamedSqliteSaver(SqliteSaver):
        """LangGraph's SqliteSaver; a damaged page that shows only when a conversation is read or
        written is the same one-line error, naming the file, as a damaged file at open."""

        path: Path

        @contextmanager
        def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
            try:
                with super().cursor(transaction) as cur:
                    yield cur
            except sqlite3.DatabaseError as error:
                raise unreadable_store(self.path, error, "read or write") from error

    return NamedSqliteSaver


def unreadable_store(path: Path, error: Exception, doing: str = "open") -> StoreError:
    """One line naming the conversation store and the fix."""
    reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
    if any(word in reason.lower() for word in ("not a database", "malformed", "corrupt")):
        fix = (f"The file is damaged: move it aside (mv {path} {path}.broken) and run the command "
               "again; a new, empty conversation store is created (the old conversations are not "
               "in it). `cafbot doctor` checks every store.")
    elif "locked" in reason.lower():
        fix = "Another process holds it; wait for it to finish and try again."
    else:
        fix = "Check that the file and its folder exist and are readable and writable by you."
    return StoreError(f"{path}: cannot {doing} the conversation store ({reason}). {fix}")


def _postgres(settings: Settings) -> AbstractContextManager[BaseCheckpointSaver]:
    if not settings.checkpointer.postgres_url:
        raise ConfigError("checkpointer.kind is postgres but checkpointer.postgres_url is empty.")
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError as error:
        raise ConfigError("The Postgres checkpointer needs `pip install -e '.[postgres]'`.") from error

    @contextmanager
    def opened() -> Iterator[BaseCheckpointSaver]:
        with PostgresSaver.from_conn_string(settings.checkpointer.postgres_url) as saver:
            saver.serde = serializer()
            saver.setup()
            yield saver

    return opened()
