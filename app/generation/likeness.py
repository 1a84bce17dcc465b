"""How alike a source's sentence and a question are: by meaning (read without medicine names
when they would drown out what is asked), by the question's rare words, and by the questions the
knowledge base links to the sentence."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from app.core.medicines import names_a_medicine, without_medicines
from app.core.records import SourceText
from app.core.text import STOPWORDS, plain, split_sentences, strip_citations
from app.generation.passages import Passage, passages

Embed = Callable[[list[str]], np.ndarray]

SAME_MEANING = 0.85  # cosine similarity from which two sentences say the same thing
_WORDS = re.compile(r"[a-z0-9]+")


def embedded(passage: Passage) -> str:
    """What a passage is scored by: a joined list by its lead-in, as the items would dilute its
    meaning (each item is scored too, see `app.generation.extractive`)."""
    return passage.lead_in if passage.is_list else passage.text


# From this many content words, a question that names a medicine says enough besides the name to be
# read on the rest alone ("he's on clozapine and has a fever and a sore throat"); a shorter one
# ("side effects of clozapine?") is read with and without it, averaged.
ASPECT_ONLY_FROM = 4


def aspect_vectors(questions: Sequence[str], texts: list[str], vectors: np.ndarray, embed: Embed
                   ) -> tuple[list[np.ndarray | None], np.ndarray]:
    """Each question part that names a medicine, embedded without the name, and the pool's texts
    likewise (None for a part that names none). A medicine's name says which topic, not which
    aspect of it, and MiniLM weighs it so much that "a fever and a sore throat on clozapine" is
    nearest "Your clozapine team is there to help"; read without it, nearest the signs of infection."""
    naming = [names_a_medicine(q) for q in questions]
    if not any(naming):
        return [None] * len(questions), vectors
    changed = [n for n, text in enumerate(texts) if names_a_medicine(text)]
    masked = embed([without_medicines(q) for q, names in zip(questions, naming, strict=True) if names]
                   + [without_medicines(texts[n]) for n in changed])
    asked = iter(masked[: sum(naming)])
    pool = vectors.copy()
    pool[changed] = masked[sum(naming):]
    return [next(asked) if names else None for names in naming], pool


def embedded_texts(source: SourceText) -> list[str]:
    """Every text the generator embeds for a source, for warming the embedding cache: its
    passages, list items and headings, and the questions it links to sentences (see `asked_of`)."""
    found = passages(source.text)
    return [*(text for p in found for text in (embedded(p), *p.introduced_items)),
            *dict.fromkeys(p.section for p in found if p.section),
            *source.answers, *(without_medicines(q) for q in source.answers)]


def content_words(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower())) - STOPWORDS


def lexical(question_words: set[str], sentence_words: set[str], idf: dict[str, float]) -> float:
    """The share of the question's words the sentence uses, each weighted by how rare it is among
    the sentences on offer: "aripiprazole" or "tardive" says what the question is about, "medicine"
    does not."""
    total = sum(idf.get(w, 0.0) for w in question_words)
    return sum(idf.get(w, 0.0) for w in question_words & sentence_words) / total if total else 0.0


def says_again(vectors: np.ndarray, text: str, embed: Embed) -> np.ndarray:
    """Which pooled sentences one of `text`'s sentences says again, maybe in other words."""
    sentences = [strip_citations(s) for s in split_sentences(text)]
    if not sentences or not len(vectors):
        return np.zeros(len(vectors), dtype=bool)
    return np.max(vectors @ embed(sentences).T, axis=1) > SAME_MEANING


def asked_of(sources: Sequence[SourceText], pool: list[tuple[int, str, Passage]], embed: Embed
             ) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """For each pooled passage, the questions its source's front matter says it answers, embedded
    as said and without medicine names (None for a passage that answers none): "What is
    clozapine?" is near any message naming clozapine, as `aspect_vectors` says of sentences."""
    links = [(doc.id, question, plain(sentence).lower()) for doc in sources
             for question, sentences in doc.answers.items() for sentence in sentences]
    if not links:
        return [None] * len(pool)
    asked: list[list[str]] = [[] for _ in pool]
    for i, (_, sid, p) in enumerate(pool):
        text = plain(p.text).lower()
        asked[i] = list(dict.fromkeys(q for owner, q, sentence in links
                                      if owner == sid and sentence.rstrip(".!?") in text))
    questions = list(dict.fromkeys(q for found in asked for q in found))
    if not questions:
        return [None] * len(pool)
    vectors, masked = embed(questions), embed([without_medicines(q) for q in questions])
    rows = [[questions.index(q) for q in found] for found in asked]
    return [(vectors[row], masked[row]) if row else None for row in rows]


def likeness(linked: tuple[np.ndarray, np.ndarray], part: np.ndarray, masked_part: np.ndarray | None,
             words: int) -> float:
    """How like the asked part the nearest linked question is, read as the extractive generator reads a
    sentence: without medicine names when the part names one (see `ASPECT_ONLY_FROM`)."""
    vectors, masked = linked
    said = float(np.max(vectors @ part))
    if masked_part is None:
        return said
    aspect = float(np.max(masked @ masked_part))
    return aspect if words >= ASPECT_ONLY_FROM else (said + aspect) / 2
