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
from app.store.locks import advisory_lock


def serializer() -> JsonPlusSerializer:
    # An explicit allowlist: the checkpointer rebuilds only our own state types (and LangChain's
    # messages), never arbitrary classes named in the database.
    return JsonPlusSerializer(allowed_msgpack_modules=list(CHECKPOINT_TYPES))


@contextmanager
def open_checkpointer(settings: Settings, *, upgrade: bool = False) -> Iterator[BaseCheckpointSaver]:
    """The configured checkpointer, its tables created on first use. An older Postgres schema is
    upgraded only with `upgrade` (`cafbot migrate`); SQLite's, one process's own file, always."""
    if settings.checkpointer.kind == "postgres":
        with _postgres(settings, upgrade=upgrade) as saver:
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


def location(settings: Settings) -> str:
    """Where the conversations are, for messages: the file, or the database without its password."""
    if settings.checkpointer.kind == "postgres" and settings.checkpointer.postgres_url:
        return _where(settings.checkpointer.postgres_url)
    return str(settings.checkpoint_path)


def _postgres(settings: Settings, *, upgrade: bool = False) -> AbstractContextManager[BaseCheckpointSaver]:
    """LangGraph's Postgres saver on a pool of connections: a connection the server dropped (a
    restart, a failover) is checked and replaced when next taken, so a replica keeps serving."""
    url = settings.checkpointer.postgres_url
    if not url:
        raise ConfigError("checkpointer.kind is postgres but checkpointer.postgres_url is empty.")
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool
    except ImportError as error:
        raise ConfigError("The Postgres checkpointer needs `pip install -e '.[postgres]'`.") from error

    @contextmanager
    def opened() -> Iterator[BaseCheckpointSaver]:
        # The saver's own settings for its connections (autocommit, dict rows, no prepared
        # statements, which a pooler in front of Postgres may not keep).
        pool = ConnectionPool(_libpq(url), min_size=1, max_size=settings.checkpointer.pool_size,
                              timeout=settings.checkpointer.connect_timeout_s, check=ConnectionPool.check_connection,
                              kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
                              open=False)
        try:
            pool.open(wait=True, timeout=settings.checkpointer.connect_timeout_s)
        except Exception as error:
            pool.close()
            raise StoreError(f"{_where(url)}: cannot reach the conversation store ({_first_line(error)}). "
                             "Check that the Postgres server is running and checkpointer.postgres_url "
                             "is right; `cafbot doctor` checks every store.") from error
        try:
            saver = PostgresSaver(pool, serde=serializer())
            migrate_postgres_checkpoints(saver, url, upgrade=upgrade)
            yield saver
        finally:
            pool.close()

    return opened()


def migrate_postgres_checkpoints(saver: BaseCheckpointSaver, url: str, *, upgrade: bool) -> None:
    """Create the checkpoint tables on an empty database; upgrade older ones only when asked
    (`cafbot migrate`), since replicas of an older cafbot may still be reading them. Under an
    advisory lock: replicas starting together wait for the first, never race it."""
    needed = len(saver.MIGRATIONS) - 1
    with saver.conn.connection() as conn, advisory_lock(conn, "cafbot:migrate:checkpoints"):
        exists = conn.execute("SELECT to_regclass('checkpoint_migrations') IS NOT NULL AS found").fetchone()["found"]
        version = conn.execute("SELECT max(v) AS v FROM checkpoint_migrations").fetchone()["v"] if exists else None
        if version is not None and version > needed:
            raise StoreError(f"{_where(url)}: the conversation store is at schema version {version}, newer "
                             f"than this cafbot's ({needed}); upgrade cafbot to open it.")
        if version is not None and version < needed and not upgrade:
            raise StoreError(f"{_where(url)}: the conversation store is at schema version {version}, this "
                             f"cafbot needs {needed}; run `cafbot migrate` once to upgrade every store.")
        if version != needed:
            saver.setup()


def _libpq(url: str) -> str:
    """A libpq connection string from either spelling (`postgresql+psycopg://` is SQLAlchemy's)."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _where(url: str) -> str:
    """The database, without its password."""
    from sqlalchemy import make_url

    return make_url(url).render_as_string(hide_password=True)


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
