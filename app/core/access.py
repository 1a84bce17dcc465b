"""Staff access codes: stored only as a salted scrypt hash, compared in constant time (wrong
guesses are limited per window by the store's `AttemptLimiter`), so a patient's browser cannot
guess its way into other people's traces."""

from __future__ import annotations

import hashlib
import hmac
import secrets

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
