"""What kind of sentence a draft sentence is: a factual claim, or one of the kinds around claims
(empathy, a reminder to check with the care team, a statement about what the sources cover, a
question, or general information marked as such). Several checks only judge claims."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from app.core.lexicon import words_regex
from app.core.text import is_question, strip_citations
from judges.local import patterns

Kind = Literal["question", "marker", "meta", "referral", "empathy", "claim"]


def mentions_care_team(sentence: str) -> bool:
    return bool(words_regex("care_team").search(sentence))


def is_referral(sentence: str) -> bool:
    """A reminder to check with the care team (doctor, nurse, pharmacist...)."""
    text = strip_citations(sentence)
    if patterns.regex("kinds", "pronoun_referral").search(text):
        return True
    return mentions_care_team(text) and bool(patterns.regex("kinds", "referral_verbs").search(text))


@lru_cache(maxsize=8192)  # every check asks it of the same draft sentences; sources' recur each turn
def kind(sentence: str) -> Kind:
    text = strip_citations(sentence)
    if is_question(text):
        return "question"
    if patterns.regex("kinds", "marker").search(text):
        return "marker"
    if patterns.regex("kinds", "meta").search(text):
        return "meta"
    if is_referral(text):
        return "referral"
    if patterns.regex("kinds", "empathy").search(text):
        return "empathy"
    return "claim"
