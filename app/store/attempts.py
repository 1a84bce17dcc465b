"""Wrong staff codes, counted in the shared store: the limit holds for the whole deployment, not
per process (N replicas would otherwise allow N times the guesses), nor per browser tab (which an
attacker could simply open again)."""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import text

from app.store.database import Database


class AttemptLimiter:
    """At most `attempts` wrong codes per `window_s`, across every process on this store."""

    def __init__(self, db: Database, attempts: int, window_s: float, clock: Callable[[], float] = time.time):
        self.db, self.attempts, self.window_s, self._clock = db, attempts, window_s, clock

    def wait_s(self) -> float:
        """Seconds until another attempt is allowed (0: now)."""
        now = self._clock()
        with self.db.engine.begin() as db:
            db.execute(text("DELETE FROM sign_in_failures WHERE failed_at <= :cutoff"), {"cutoff": now - self.window_s})
            times = db.execute(text("SELECT failed_at FROM sign_in_failures ORDER BY failed_at DESC LIMIT :n"),
                               {"n": self.attempts}).scalars().all()
        if len(times) < self.attempts:
            return 0.0
        return max(0.0, self.window_s - (now - min(times)))

    def failed(self) -> None:
        with self.db.engine.begin() as db:
            db.execute(text("INSERT INTO sign_in_failures (failed_at) VALUES (:t)"), {"t": self._clock()})
