"""The store's database: SQLite in the data dir by default, any SQLAlchemy URL (Postgres for
teams) by configuration. Schema changes are numbered migrations, applied in order at open and
recorded in `schema_version`; a migration is never edited once released, only followed by another.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, make_url, text
from sqlalchemy.exc import DatabaseError, OperationalError

from app.core.errors import CafbotError
from app.core.files import private_sqlite
from app.store.locks import lock_key


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


def _m3_scoring(db: Connection) -> None:
    # Items are snapshots (question, answer, context, cited sources' text) so a later change to the
    # knowledge base or the turn log never changes what was scored. `hidden` holds what raters must
    # not see (run, role, CAF condition, model); only the analysis reads it.
    db.execute(text("""
        CREATE TABLE score_items (
            item_id TEXT PRIMARY KEY,
            collection TEXT NOT NULL,       -- a drift run's id, or a name given to saved chats
            created_at TEXT NOT NULL,
            question TEXT NOT NULL,
            answer TEXT NOT NULL,
            context TEXT NOT NULL,          -- JSON: the earlier exchanges, oldest first
            sources TEXT NOT NULL,          -- JSON: the cited sources, id, title and text
            hidden TEXT NOT NULL            -- JSON: role, condition, sample, turn, run, model
        )"""))
    db.execute(text("CREATE INDEX score_items_collection ON score_items (collection)"))
    db.execute(text("CREATE TABLE raters (rater TEXT PRIMARY KEY, created_at TEXT NOT NULL)"))
    db.execute(text("""
        CREATE TABLE assignments (
            rater TEXT NOT NULL REFERENCES raters(rater) ON DELETE CASCADE,
            item_id TEXT NOT NULL REFERENCES score_items(item_id) ON DELETE CASCADE,
            position INTEGER NOT NULL,      -- the rater's own shuffled order
            seed INTEGER NOT NULL,          -- the shuffle's seed, recorded to reproduce it
            assigned_at TEXT NOT NULL,
            PRIMARY KEY (rater, item_id)
        )"""))
    db.execute(text("""
        CREATE TABLE scores (
            rater TEXT NOT NULL,
            item_id TEXT NOT NULL,
            score INTEGER NOT NULL CHECK (score >= 0 AND score <= 4),
            criteria TEXT NOT NULL,         -- JSON: criterion id -> ticked, when scored by criterion
            comment TEXT NOT NULL,
            scored_at TEXT NOT NULL,
            via TEXT NOT NULL,              -- app or sheet
            revisions INTEGER NOT NULL,     -- how many times the rater changed it
            PRIMARY KEY (rater, item_id),
            FOREIGN KEY (rater, item_id) REFERENCES assignments(rater, item_id) ON DELETE CASCADE
        )"""))
    db.execute(text("""
        CREATE TABLE ai_ratings (
            item_id TEXT NOT NULL REFERENCES score_items(item_id) ON DELETE CASCADE,
            model TEXT NOT NULL,
            score INTEGER NOT NULL CHECK (score >= 0 AND score <= 4),
            criteria TEXT NOT NULL,         -- JSON: criterion id -> {met, reason}
            rated_at TEXT NOT NULL,
            PRIMARY KEY (item_id, model)
        )"""))


def _m4_sign_in_failures(db: Connection) -> None:
    # Wrong staff codes, one row each (seconds since the epoch), so every replica counts them all.
    db.execute(text("CREATE TABLE sign_in_failures (failed_at DOUBLE PRECISION NOT NULL)"))
    db.execute(text("CREATE INDEX sign_in_failures_at ON sign_in_failures (failed_at)"))


MIGRATIONS: list[Callable[[Connection], None]] = [_m1_conversations_and_turns, _m2_turn_feedback, _m3_scoring,
                                                  _m4_sign_in_failures]


class Database:
    """`upgrade`: apply migrations to a store that has tables already. SQLite (one machine's own
    file) always does; a shared Postgres only through `cafbot migrate`, since replicas of the older
    cafbot may still be serving from it. An empty database is set up by whoever opens it first."""

    def __init__(self, url: str, *, upgrade: bool | None = None):
        self.url = url
        self.shared = not url.startswith("sqlite")
        self.location = make_url(url).render_as_string(hide_password=True) if self.shared else \
            url.removeprefix("sqlite:///")
        try:
            self.engine = _engine(url)
            self._migrate(upgrade=not self.shared if upgrade is None else upgrade)
        except (DatabaseError, OperationalError) as error:
            fix = ("Check that the Postgres server is running and store_url is right; `cafbot doctor` "
                   "checks every store." if self.shared else
                   "If the file is damaged, move it aside and run the command again: a new, empty store "
                   "is created.")
            raise StoreError(f"{self.location}: cannot open the store ({_first_line(error)}). {fix}") from error

    @classmethod
    def open(cls, data_dir: Path, url: str | None = None, *, upgrade: bool | None = None) -> Database:
        """The configured store: `url` if given, else `store.sqlite` in `data_dir`."""
        return cls(url, upgrade=upgrade) if url else cls.in_data_dir(data_dir)

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> Database:
        """`store.sqlite` in `data_dir`: the folder 0700, the database and its WAL files 0600."""
        return cls(f"sqlite:///{private_sqlite(data_dir / 'store.sqlite')}")

    @property
    def version(self) -> int:
        with self.engine.connect() as db:
            return int(db.execute(text("SELECT max(version) FROM schema_version")).scalar() or 0)

    def _migrate(self, *, upgrade: bool) -> None:
        # One transaction, under a lock held until it commits (Postgres's DDL is transactional):
        # replicas opening an empty database together wait for the first, then find it done.
        with self.engine.begin() as db:
            if self.shared:
                db.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key("cafbot:migrate:store")})
            db.execute(text("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY)"))
            current = int(db.execute(text("SELECT max(version) FROM schema_version")).scalar() or 0)
            if current > len(MIGRATIONS):
                raise StoreError(f"{self.location}: the store is at schema version {current}, newer than "
                                 f"this cafbot ({len(MIGRATIONS)}); upgrade cafbot to open it.")
            if 0 < current < len(MIGRATIONS) and not upgrade:
                raise StoreError(f"{self.location}: the store is at schema version {current}, this cafbot "
                                 f"needs {len(MIGRATIONS)}; run `cafbot migrate` once to upgrade every store.")
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
