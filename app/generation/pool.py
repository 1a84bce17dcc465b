"""The sentences on offer for an answer: the quotable passages of its sources that are new to the
asker, with what they are scored by."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from app.core.records import SourceText
from app.core.text import citations_in
from app.generation.likeness import Embed, asked_of, content_words, embedded, says_again
from app.generation.passages import Passage, passages
from judges.source_audit import flag_for


@lru_cache(maxsize=256)
def quotable(body: str) -> tuple[tuple[Passage, frozenset[str]], ...]:
    """A source's passages that may be quoted, with their content words: read once per source
    text, as the same sources come back turn after turn. A sentence a judge check flags (an
    instruction, a medicine change) is never quoted."""
    return tuple((p, frozenset(content_words(p.text))) for p in passages(body) if flag_for(p.text) is None)


@dataclass(frozen=True)
class Pool:
    """The sentences on offer: the passages of the sources that are new to the asker, with what
    they are scored by, in the same order."""

    entries: list[tuple[int, str, Passage]]  # (its source's rank, source id, passage)
    words: list[frozenset[str]]  # its content words
    vectors: np.ndarray  # its meaning (a joined list's by its lead-in)
    heading_vectors: np.ndarray  # its section heading's meaning
    answers_asked: list[tuple[np.ndarray, np.ndarray] | None]  # the questions linked to it (see `asked_of`)
    focused: set[tuple[str, str]]  # the (source id, section)s the answer referred back to drew on


def sentences_on_offer(sources: Sequence[SourceText], embed: Embed, said: str, quoted: str, focus: str) -> Pool | None:
    """The pool, or None when nothing is left to quote. What was said or quoted is not offered,
    nor what says it again in other words (see `app.generation.extractive.pick_sentences`)."""
    offered = [(rank, doc.id, p, found, p.section or doc.title) for rank, doc in enumerate(sources)
               for p, found in quotable(doc.text) if p.text not in said and p.text not in quoted]
    pool = [(rank, sid, p) for rank, sid, p, _, _ in offered]
    sentence_words = [found for _, _, _, found, _ in offered]
    if not pool:
        return None
    vectors = embed([embedded(p) for _, _, p in pool])
    # What each sentence's section is about, by its heading (the source's title before the first):
    # "It is not your fault" says what "Nothing you did, said or thought caused it" answers.
    headings = [heading for *_, heading in offered]
    heading_texts = list(dict.fromkeys(headings))
    heading_vectors = embed(heading_texts)[[heading_texts.index(h) for h in headings]]
    focused = {(doc.id, p.section) for doc in sources for p, _ in quotable(doc.text) if p.text in focus} \
        | {(sid, p.section) for (_, sid, p), near in zip(pool, says_again(vectors, focus, embed), strict=True)
           if near} if focus else set()
    answers_asked = asked_of(sources, pool, embed)
    fresh = ~says_again(vectors, said, embed)
    if quoted:  # what its own sources say like it is not new either, a list with such an item too
        drawn_from = set(citations_in(quoted))
        said_so = says_again(vectors, quoted, embed)
        for i, (_, sid, p) in enumerate(pool):
            if sid in drawn_from and (said_so[i] or (p.items and says_again(embed(p.introduced_items), quoted,
                                                                              embed).any())):
                fresh[i] = False
    if not fresh.any():
        return None

    def kept(values: list) -> list:
        return [value for value, keep in zip(values, fresh, strict=True) if keep]

    return Pool(kept(pool), kept(sentence_words), vectors[fresh], heading_vectors[fresh], kept(answers_asked),
                 focused)
