"""The grounded extractive generator: an answer made only of the sources' own sentences.

It is the answer when no chat model is configured, and the CAF's safe fallback when a draft cannot
be made to pass. Every sentence is copied from a source and cited, so it cannot invent anything;
its weakness is fluency, not faithfulness.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from app.core.records import SourceText
from app.core.text import STOPWORDS, split_sentences
from app.prompts import reply
from judges.source_audit import flag_for

Embed = Callable[[list[str]], np.ndarray]

_MARKUP = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s+)")
_EMPHASIS = re.compile(r"[*_`]{1,3}")
_WORDS = re.compile(r"[a-z0-9]+")
# A sentence that opens with one of these leans on the sentence before it, so it reads badly alone.
_DANGLING = re.compile(r"^(they|these|this|that|those|it|its|he|she|there|also|so|but|and|or)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Picked:
    source_id: str
    position: int
    text: str
    score: float


def source_sentences(body: str) -> list[str]:
    """A source's body as clean sentences: headings dropped, list markers and emphasis removed.
    A list joins the sentence that introduces it ("Common early signs include: a; b; c."), since
    its items mean little alone."""
    sentences: list[str] = []
    lead_in: str | None = None
    items: list[str] = []

    def close_list() -> None:
        nonlocal lead_in, items
        if lead_in and items:
            sentences.append(f"{lead_in} {'; '.join(items)}.")
        lead_in, items = None, []

    for line in body.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        is_item = bool(_MARKUP.match(line)) and not line.lstrip().startswith("#")
        clean = _EMPHASIS.sub("", _MARKUP.sub("", line)).strip()
        if is_item and lead_in is not None:
            items.append(clean.rstrip(".;"))
            continue
        close_list()
        for sentence in split_sentences(clean):
            if sentence.endswith(":"):
                lead_in = sentence  # its list follows
            # Fragments (a list item's tail, a lead-in with no list) are not answers.
            elif len(sentence.split()) >= 5 and not sentence[0].islower():
                sentences.append(sentence if sentence[-1] in ".!?" else sentence + ".")
    close_list()
    return sentences


def _lexical(question_words: set[str], sentence: str) -> float:
    words = set(_WORDS.findall(sentence.lower())) - STOPWORDS
    return len(words & question_words) / (len(question_words) or 1)


def pick_sentences(
    questions: Sequence[str], sources: Sequence[SourceText], embed: Embed,
    max_sentences: int = 5, per_source: int = 4, already_said: Sequence[str] = (),
) -> list[Picked]:
    """The best sentences for the question's parts; every part gets its best sentence first.
    Sentences found in `already_said` (earlier answers) are left for something new."""
    said = " ".join(already_said)
    # A sentence a judge check flags (an instruction, a medicine change) is never quoted.
    pool = [(doc.id, i, s) for doc in sources for i, s in enumerate(source_sentences(doc.text))
            if flag_for(s) is None and s not in said]
    if not pool:
        return []
    # A joined list is scored by its introducing sentence: the items would dilute its meaning.
    vectors = embed([s.split(": ", 1)[0] if "; " in s else s for _, _, s in pool])
    part_vectors = embed(list(questions))
    chosen: dict[tuple[str, int], Picked] = {}
    scored_parts = []
    for part, part_vector in zip(questions, part_vectors, strict=True):
        words = set(_WORDS.findall(part.lower())) - STOPWORDS
        scores = (vectors @ part_vector + 0.3 * np.array([_lexical(words, s) for _, _, s in pool])
                  - 0.15 * np.array([bool(_DANGLING.match(s)) for _, _, s in pool]))
        scored_parts.append(scores)
    combined = np.max(np.vstack(scored_parts), axis=0)
    counts: dict[str, int] = {}

    def take(index: int) -> None:
        source_id, position, text = pool[index]
        if (source_id, position) in chosen or counts.get(source_id, 0) >= per_source:
            return
        counts[source_id] = counts.get(source_id, 0) + 1
        chosen[(source_id, position)] = Picked(source_id, position, text, float(combined[index]))

    for scores in scored_parts:  # one sentence per part first, so no part goes unanswered
        take(int(np.argmax(scores)))
    for index in np.argsort(-combined):
        if len(chosen) >= max_sentences:
            break
        take(int(index))
    return list(chosen.values())


def compose_extractive_answer(
    questions: Sequence[str], sources: Sequence[SourceText], embed: Embed, max_sentences: int = 5,
    already_said: Sequence[str] = (),
) -> str:
    """Readable order: sources in the order given (best first), sentences in their own order."""
    picked = pick_sentences(questions, sources, embed, max_sentences=max_sentences,
                            already_said=already_said)
    if not picked:
        return reply("verification_reminder")
    rank = {doc.id: n for n, doc in enumerate(sources)}
    picked.sort(key=lambda p: (rank[p.source_id], p.position))
    paragraphs: list[str] = []
    for doc in sources:
        lines = [f"{p.text} [{p.source_id}]" for p in picked if p.source_id == doc.id]
        if lines:
            paragraphs.append(" ".join(lines))
    return "\n\n".join([*paragraphs, reply("verification_reminder")])
