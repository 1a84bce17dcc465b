"""Staff access codes: stored only as a salted scrypt hash, compared in constant time, and wrong
guesses limited per window, so a patient's browser cannot guess its way into other people's traces."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time

from app.core.errors import ConfigError

_N, _R, _P = 2**14, 8, 1  # scrypt's interactive-login cost


def hash_code(code: str) -> str:
    """The string to put in `ui.staff_code_hash`: `scrypt$<salt>$<digest>`, both hex."""
    if len(code) < 8:
        raise ConfigError("a staff access code needs at least 8 characters")
    salt = secrets.token_bytes(16)
    return f"scrypt${salt.hex()}${_digest(code, salt).hex()}"


def verify_code(code: str, stored: str) -> bool:
    try:
        scheme, salt, digest = stored.split("$")
        salt_bytes, digest_bytes = bytes.fromhex(salt), bytes.fromhex(digest)
    except ValueError:
        raise ConfigError("ui.staff_code_hash is not a hash made by `cafbot ui --hash-code`; "
                          "make a new one with that command") from None
    if scheme != "scrypt":
        raise ConfigError(f"ui.staff_code_hash: unknown scheme {scheme!r}; expected scrypt")
    return hmac.compare_digest(_digest(code, salt_bytes), digest_bytes)


def _digest(code: str, salt: bytes) -> bytes:
    return hashlib.scrypt(code.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=32)


class AttemptLimiter:
    """At most `attempts` wrong codes per `window_s`, counted for the whole process (not per
    browser tab, which an attacker could simply open again)."""

    def __init__(self, attempts: int, window_s: float, clock=time.monotonic):
        self.attempts, self.window_s, self._clock = attempts, window_s, clock
        self._failures: list[float] = []
        self._lock = threading.Lock()

    def wait_s(self) -> float:
        """Seconds until another attempt is allowed (0: now)."""
        with self._lock:
            now = self._clock()
            self._failures = [t for t in self._failures if now - t < self.window_s]
            if len(self._failures) < self.attempts:
                return 0.0
            return self.window_s - (now - self._failures[0])

    def failed(self) -> None:
        with self._lock:
            self._failures.append(self._clock())
