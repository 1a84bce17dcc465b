"""Follow-up suggestions: questions the knowledge base answers on the topic just discussed (each
source's `questions:`), never one already asked or already shown in the conversation."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from itertools import chain, zip_longest

from rapidfuzz import fuzz

from app.core.records import TurnTrace

SUGGESTING_ROUTES = ("answer", "boundary")
SAME_QUESTION = 90  # token-set similarity (0-100) above which a suggestion repeats a question


def suggestions_per_turn(turns: Iterable[TurnTrace], questions_of: Callable[[str], list[str]],
                         *, per_turn: int = 3) -> list[list[str]]:
    """For each turn, in order, the suggestions shown under its answer. Computed from the whole
    conversation, so what was shown under an earlier answer is never offered again, and a reload
    shows the same suggestions as before."""
    asked: set[str] = set()
    shown: set[str] = set()
    plan = []
    for trace in turns:
        asked.add(_key(trace.user_message))
        offered = []
        if trace.route in SUGGESTING_ROUTES:
            # Round-robin over the cited sources (the main topic first), then the other sources
            # found for the question: its neighbours.
            found = [c.source_id for c in trace.identification.candidates] if trace.identification else []
            lists = [questions_of(sid) for sid in dict.fromkeys([*trace.citations, *trace.prompt_sources, *found])]
            for question in chain.from_iterable(zip_longest(*lists)):
                if question is None or _key(question) in shown or _already_asked(question, asked):
                    continue
                offered.append(question)
                shown.add(_key(question))
                if len(offered) == per_turn:
                    break
        plan.append(offered)
    return plan


def _already_asked(question: str, asked: set[str]) -> bool:
    """Asked in these or nearly these words: "what is clozapine used for?" after "what is
    clozapine?" adds nothing the answer did not already say."""
    key = _key(question)
    return key in asked or any(fuzz.token_set_ratio(key, earlier) >= SAME_QUESTION
                               for earlier in asked if len(earlier.split()) >= 3)  # not "why?", "ok"


def _key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))
