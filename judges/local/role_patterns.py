"""The role-and-scope check's pattern families (persona, diagnosis, therapy, speculation) read on
one sentence: the check's explicit layer, and features of its classifier (role_model.py)."""

from __future__ import annotations

import re

from app.core.records import Verdict
from app.core.text import strip_citations
from judges.local import patterns

CHECK = "role_scope"
KINDS: dict[str, Verdict] = {"persona": "reject", "diagnosis": "reject", "therapy": "reject",
                             "speculation": "warn"}


def pattern_hits(sentence: str) -> dict[str, bool]:
    """Which pattern families a sentence matches (negated mentions do not count)."""
    negated = re.compile(patterns.section(CHECK)["negated_before"], re.IGNORECASE)
    text = strip_citations(sentence)
    hits = {}
    for family in KINDS:
        hits[family] = any(not negated.search(text[:m.start()])
                           for m in patterns.regex(CHECK, family).finditer(text))
    return hits
