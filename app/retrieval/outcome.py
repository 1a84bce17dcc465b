"""From a question's readings to its outcome: each part's ranked sources, lifted by the sentences
that ask it and blended with a model's choice, sorted into clear, middling or none, with the
candidates to answer from or to offer."""

from __future__ import annotations

from typing import Literal

from app.core.config_sections import Retrieval
from app.core.records import Candidate
from app.kb.loader import KnowledgeBase
from app.retrieval.fusion import ranked

Scored = list[tuple[str, float]]  # (source id, confidence), best first
Outcome = Literal["clear", "middling", "none"]


def lifted(readings: list[Scored], sentences: list[tuple[int, str]],
           sentence_readings: list[Scored]) -> list[Scored]:
    """A part's reading with each source lifted to the mean of its confidence for the whole
    part and for one of its sentences, if that is higher: a question wrapped in a story ("We moved
    house and she started a new school… What helps with hearing voices?") is found by the
    sentence that asks it rather than lost in the average of them all, while a background
    sentence ("His doctor talked about part-time hours at his job.") cannot outweigh what the
    whole message asks."""
    lifted = [dict(reading) for reading in readings]
    for (n, _), found in zip(sentences, sentence_readings, strict=True):
        whole = dict(readings[n])
        unseen = min(whole.values(), default=0.0)  # not in the part's list: no closer than its last
        for sid, confidence in found:
            lifted[n][sid] = max(lifted[n].get(sid, 0.0), (confidence + whole.get(sid, unseen)) / 2)
    return [ranked(reading) if reading != dict(original) else original
            for reading, original in zip(lifted, readings, strict=True)]


def blended(scored: Scored, llm: dict[str, float], weight: float) -> Scored:
    """Retrieval's reading and the summary strategy's, `weight` being the model's share."""
    own = dict(scored)
    return ranked({sid: (1 - weight) * own.get(sid, 0.0) + weight * llm.get(sid, 0.0)
                   for sid in {*own, *llm}})


def decide(parts: list[str], scored: list[Scored], per_part: bool, retrieval: Retrieval, kb: KnowledgeBase
           ) -> tuple[Outcome, list[Candidate]]:
    """The outcome by the best confidence of any reading, and its candidates (labelled with their
    part when `per_part`)."""
    r = retrieval
    labels = parts if per_part else [None] * len(scored)
    best = max((s[0][1] for s in scored if s), default=0.0)
    if best < r.none_threshold:
        return "none", []
    if best >= r.clear_threshold:
        # Each part that matched at all gets its best source; then any other clear ones.
        firsts = [(s[0][0], s[0][1], label) for s, label in zip(scored, labels, strict=True)
                  if s and s[0][1] >= r.none_threshold]
        extras = sorted(((sid, conf, label) for s, label in zip(scored, labels, strict=True)
                         for sid, conf in s[1:] if conf >= r.clear_threshold),
                        key=lambda item: -item[1])
        chosen = _candidates([*firsts, *extras], limit=max(r.top_k, len(firsts)), kb=kb)
        return "clear", chosen
    # Middling: offer the top few, taking turns between the parts.
    turns = [(sid, conf, label) for rank in range(r.top_k)
             for s, label in zip(scored, labels, strict=True) if rank < len(s)
             for sid, conf in [s[rank]]]
    return "middling", _candidates(turns, limit=r.top_k, kb=kb)


def _candidates(items: list[tuple[str, float, str | None]], limit: int, kb: KnowledgeBase) -> list[Candidate]:
    chosen: dict[str, Candidate] = {}
    for sid, conf, label in items:
        source = kb.get(sid)
        if sid not in chosen and source is not None and len(chosen) < limit:
            chosen[sid] = Candidate(source_id=sid, title=source.title,
                                    confidence=conf, part=label)
    return list(chosen.values())
