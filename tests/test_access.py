"""Staff access codes: hashed with a salt, checked in constant time, wrong guesses limited."""

from __future__ import annotations

import pytest

from app.core.access import hash_code, verify_code
from app.core.config import Settings
from app.core.errors import ConfigError
from app.store import Database
from app.store.attempts import AttemptLimiter


def test_a_code_is_stored_salted_and_only_its_own_code_verifies():
    first, second = hash_code("a long staff code"), hash_code("a long staff code")
    assert first != second and "a long staff code" not in first  # salted, never the code itself
    assert verify_code("a long staff code", first) and verify_code("a long staff code", second)
    assert not verify_code("a long staff cod", first) and not verify_code("", first)


def test_short_codes_and_malformed_hashes_are_refused_with_the_fix():
    with pytest.raises(ConfigError, match="at least 8"):
        hash_code("short")
    with pytest.raises(ConfigError, match="cafbot ui --hash-code"):
        verify_code("anything at all", "plain-text-code")


def test_wrong_attempts_lock_out_for_the_window_then_allow_again(tmp_path):
    """Counted in the store: two replicas' limiters on one store share the count."""
    now = [0.0]
    store = Database.in_data_dir(tmp_path)
    first, second = (AttemptLimiter(store, attempts=3, window_s=60, clock=lambda: now[0]) for _ in range(2))
    for limiter in (first, second, first):
        assert limiter.wait_s() == 0
        limiter.failed()
    now[0] = 10.0
    assert first.wait_s() == pytest.approx(50.0) and second.wait_s() == pytest.approx(50.0)
    now[0] = 61.0
    assert second.wait_s() == 0


def test_the_staff_code_hash_is_masked_in_the_shown_configuration():
    settings = Settings(ui={"staff_code_hash": hash_code("a long staff code")})
    assert settings.masked()["ui"]["staff_code_hash"] == "****(set)"
    assert Settings().masked()["ui"]["staff_code_hash"] is None
