"""A boundary reply's safety fact for a kind of request no answer card answers: the source sentence
closest to what any service says of that kind ("never stop a medicine on your own…"), quoted with
its citation, so a knowledge base without cards still gives one. A sentence that leans on the one
before it ("Say that you take it.") or is a list is never chosen: it reads badly on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property

import numpy as np

from app.generation.passages import passages

Embed = Callable[[list[str]], np.ndarray]

# What any service says of each kind of request, in general words: the fact is the sources' own
# sentence nearest this, never this text.
KIND_STATEMENTS = {
    "stop_or_reduce": "Never stop or cut down a medicine on your own: any change is planned with your prescriber.",
    "dose": "Only your prescriber can decide your dose; do not change it yourself.",
    "missed_dose": "If you miss a dose, do not take a double dose to make up for it; ask a pharmacist what to do.",
    "switch": "Changing to a different medicine is planned with your prescriber, not done on your own.",
    "combine": "Check with a pharmacist or doctor before mixing your medicine with other medicines, alcohol or drugs.",
    "side_effect_decision": "Tell your prescriber about side effects rather than stopping the medicine yourself.",
    "diagnosis": "Only a qualified professional can make a diagnosis, after a full assessment.",
    "relapse_check": "If early warning signs come back, contact your care team early.",
    "risk_rating": "Only the professionals who know a person's situation can judge their own risk.",
    "medicine_for_someone": "A medicine is taken only with the person's agreement, as prescribed for them.",
    "therapy_request": "Talking therapies are given by trained therapists, arranged through the care team.",
    "urgent": "If you are worried today, contact your care team or its out-of-hours line.",
}
MIN_SIMILARITY = 0.7  # below this, no source sentence says it (at 0.6 "who to tell about a diagnosis" is one)


class SourcedFacts:
    """Each kind's safety fact from the sources, found on first use."""

    def __init__(self, sources: Sequence[tuple[str, str]], embed: Embed):
        self._sources = sources  # (id, text)
        self._embed = embed
        self._found: dict[str, str | None] = {}

    @cached_property
    def _sentences(self) -> tuple[list[str], np.ndarray | None]:
        texts = [f"{p.text} [{sid}]" for sid, text in self._sources for p in passages(text)
                 if not p.leans_back and not p.items and not p.text.rstrip().endswith(":")]
        plain = [t.rsplit(" [", 1)[0] for t in texts]
        return texts, (self._embed(plain) if plain else None)

    def fact_for(self, kind: str) -> str | None:
        """The cited source sentence that says `kind`'s safety fact, or None."""
        if kind not in self._found:
            self._found[kind] = self._nearest(KIND_STATEMENTS[kind]) if kind in KIND_STATEMENTS else None
        return self._found[kind]

    def _nearest(self, statement: str) -> str | None:
        texts, vectors = self._sentences
        if vectors is None:
            return None
        wanted = self._embed([statement])[0]
        scores = vectors @ wanted / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(wanted) + 1e-9)
        best = int(np.argmax(scores))
        return texts[best] if scores[best] >= MIN_SIMILARITY else None
