"""Locks that hold across machines: Postgres advisory locks, named by a string.

A session-level advisory lock belongs to one connection: it is released when the connection ends,
so a replica that dies (or loses its connection) never leaves a conversation locked.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any


def lock_key(name: str) -> int:
    """The signed 64-bit key Postgres's advisory locks take, derived from `name`."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


@contextmanager
def advisory_lock(conn: Any, name: str, timeout_s: float | None = None,
                  busy: Callable[[], Exception] | None = None) -> Iterator[None]:
    """Hold the advisory lock `name` on the psycopg connection `conn` (in autocommit) for the
    block. Waits as long as it takes (`timeout_s` None), or raises `busy()` after `timeout_s`."""
    key = lock_key(name)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    # Polled rather than a blocking pg_advisory_lock: the wait then has the same timeout as the
    # file lock's, and a connection lost while waiting is an error at once, not a hang.
    while not _scalar(conn.execute("SELECT pg_try_advisory_lock(%s) AS held", (key,)).fetchone()):
        if deadline is not None and time.monotonic() >= deadline:
            raise (busy() if busy else TimeoutError(f"advisory lock {name!r} is held by another process"))
        time.sleep(0.05)
    try:
        yield
    finally:
        with suppress(Exception):  # the connection is gone, and the lock with it
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def _scalar(row: Any) -> Any:
    """The first column of a row, whether the connection returns tuples or dicts."""
    return next(iter(row.values())) if isinstance(row, dict) else row[0]
