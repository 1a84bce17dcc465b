"""Fast stand-ins for the two heavy parts, so the fast suite runs whole turns through the real
graph, filter, checkpointer and store: an embedder that hashes words (no model to load) and an
identifier that matches a question's words against each source's title, keywords and summary
(no index to build). Their answers are deterministic; retrieval quality is not what they test.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Collection
from functools import lru_cache
from pathlib import Path

import numpy as np

from app.core.records import Candidate, Identification
from app.core.text import STOPWORDS, stem, words
from app.kb.loader import KnowledgeBase


def _stems(text: str) -> set[str]:
    return {stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 2}


class HashingEmbedder:
    name = "hashing-test-embedder"
    dimensions = 384

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: list[str], batch_size: int = 64, *, cache: bool | None = None) -> np.ndarray:
        self.calls += 1
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([_hashed(text, self.dimensions) for text in texts])

    def encode_known(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)

    def known_words(self) -> set[str]:
        return set()


@lru_cache(maxsize=16384)  # as the real embedder remembers the texts that recur
def _hashed(text: str, dimensions: int) -> np.ndarray:
    out = np.zeros(dimensions, dtype=np.float32)
    for token in _stems(text) or {"_empty"}:
        out[int(hashlib.md5(token.encode()).hexdigest(), 16) % dimensions] += 1.0
    out /= np.linalg.norm(out)
    out.flags.writeable = False
    return out


class KeywordIdentifier:
    """Two or more shared word stems: clear; one: "did you mean"; none: not covered."""

    def __init__(self, knowledge_base: KnowledgeBase):
        self.knowledge_base = knowledge_base
        self._stems = {s.id: _stems(" ".join([s.title, s.summary, *s.keywords])) for s in knowledge_base}

    def identify(self, question: str, context: str = "", own_topic: bool | None = None, referred: bool = False,
                 last_sources: Collection[str] = ()) -> Identification:
        started = time.perf_counter()
        scored = self._hits(question)
        best = scored[0][0] if scored else 0
        outcome = "clear" if best >= 2 else "middling" if best == 1 else "none"
        candidates = [Candidate(source_id=sid, title=self.knowledge_base.get(sid).title,
                                confidence=min(1.0, hits / 4))
                      for hits, sid in scored[:3] if hits]
        return Identification(outcome=outcome, candidates=candidates, parts=[question],
                              latency_ms=(time.perf_counter() - started) * 1000)

    def _hits(self, text: str) -> list[tuple[int, str]]:
        asked = _stems(text)
        return sorted(((len(asked & stems), sid) for sid, stems in self._stems.items()), reverse=True)

    def score(self, texts: list[str]) -> list[list[tuple[str, float]]]:
        return [[(sid, min(1.0, hits / 4)) for hits, sid in self._hits(text)] for text in texts]

    def names_own_topic(self, question: str) -> bool:
        return False

    def keywords_said(self, text: str, source_id: str) -> list[str]:
        said = _stems(text)
        source = self.knowledge_base.get(source_id)
        return [keyword for keyword in source.keywords if _stems(keyword) <= said] if source else []

    def correct_spelling(self, text: str) -> str:
        return text

    def correct_english(self, text: str) -> str:
        return text

    def follow_index(self) -> None:
        """No index to follow."""


def write_sources(folder: Path, sources: dict[str, tuple[str, str, str, str]]) -> Path:
    """A small knowledge base: one Markdown source per (id: title, summary, keywords, body)."""
    folder.mkdir(parents=True, exist_ok=True)
    for sid, (title, summary, keywords, body) in sources.items():
        (folder / f"{sid}.md").write_text(
            f"---\nid: {sid}\ntitle: {title}\nsummary: {summary}\nkeywords: [{keywords}]\n---\n"
            f"# {title}\n\n{body}\n", encoding="utf-8")
    return folder
