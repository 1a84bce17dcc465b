"""Other illnesses, named: a question about one of them that says nothing of the service's own
condition is not covered by its sources (app/core/conditions.yaml)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from app.core.datafiles import parse_yaml

CONDITIONS_FILE = Path(__file__).with_name("conditions.yaml")


@cache
def _patterns() -> dict[str, re.Pattern[str]]:
    data = parse_yaml(CONDITIONS_FILE.read_text(encoding="utf-8"))["conditions"]
    return {name: re.compile(rf"\b(?:{'|'.join(forms)})\b", re.IGNORECASE) for name, forms in data.items()}


def other_conditions(text: str, own_words: list[str]) -> list[str]:
    """The illnesses `text` names that are not the service's own (`own_words`: its profile's
    condition words, which also make the message its own when it says one)."""
    lowered = text.lower()
    if any(re.search(rf"\b{re.escape(word.lower())}", lowered) for word in own_words):
        return []
    return [name for name, pattern in _patterns().items()
            if pattern.search(text) and not any(word.lower() in name for word in own_words)]
