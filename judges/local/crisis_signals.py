"""Co-occurring risk signals for the crisis detector: families of words (death, harm,
hopelessness, means, intent, voices, danger) that rarely meet in an ordinary message. Where the
patterns need the right phrase, this layer needs only the right ingredients, so unseen wording
("looked up how high the multi-storey is, nobody would notice") is still caught."""

from __future__ import annotations

import re
from functools import cache

from judges.local import patterns


@cache
def _families() -> dict[str, re.Pattern[str]]:
    return {name: re.compile(rx, re.IGNORECASE)
            for name, rx in patterns.section("crisis")["signals"].items()}


def signals(normalised: str) -> list[str]:
    """The signal families present in an already normalised message."""
    return [name for name, rx in _families().items() if rx.search(normalised)]


def is_crisis(normalised: str) -> tuple[bool, list[str]]:
    found = signals(normalised)
    section = patterns.section("crisis")
    core = set(section["core_signals"])
    return len(found) >= int(section["signals_needed"]) and bool(core & set(found)), found
