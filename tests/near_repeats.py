"""Near repeats between what a model learns from and what measures it.

MiniLM reads English and, roughly, other Latin-script languages; elsewhere it maps most
characters, and every emoji, to the same unknown token, so its cosine calls unrelated Chinese or
Hindi messages repeats. There the characters themselves are compared."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

COSINE = 0.90  # where MiniLM reads both messages
CHARACTERS = 0.85  # Dice overlap of characters and character pairs, where it does not


def _latin(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    latin = sum(c.isascii() or "LATIN" in unicodedata.name(c, "") for c in letters)
    return bool(letters) and latin >= len(letters) / 2


def _bare(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.casefold()).strip() or text


def _character_overlap(texts: list[str], others: list[str]) -> np.ndarray:
    """Dice's coefficient between the sets of characters and character pairs of each two texts."""
    counter = CountVectorizer(analyzer="char", ngram_range=(1, 2), binary=True, lowercase=False,
                              preprocessor=_bare).fit(texts + others)
    ours, theirs = counter.transform(texts), counter.transform(others)
    shared = (ours @ theirs.T).toarray()
    return 2 * shared / (np.asarray(ours.sum(axis=1)) + np.asarray(theirs.sum(axis=1)).T)


def near_repeats(embedder, texts: list[str], others: list[str]) -> list[tuple[str, str]]:
    """Each pair of a text and one of `others` that nearly repeat each other."""
    latin = np.array([_latin(t) for t in texts])[:, None] & np.array([_latin(o) for o in others])[None, :]
    cosine = embedder.encode(texts) @ embedder.encode(others).T
    near = np.where(latin, cosine >= COSINE, _character_overlap(texts, others) >= CHARACTERS)
    return [(texts[row], others[column]) for row, column in zip(*np.nonzero(near), strict=True)]
