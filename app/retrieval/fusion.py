"""Reciprocal-rank fusion of ranked lists, and chunk scores folded into source scores.

RRF (Cormack et al., 2009) adds 1 / (k + rank) over the lists an item appears in. It needs no
score normalisation, which is why it suits mixing cosine similarities with BM25 scores; k damps
the difference between the first few ranks (60 is the customary value).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence


def rrf(rankings: Iterable[Sequence[str]], k: int = 60,
        weights: Sequence[float] | None = None) -> dict[str, float]:
    """Fused score per item; `weights` scales each list's contribution (default 1 each)."""
    scores: dict[str, float] = defaultdict(float)
    for i, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[i]
        for rank, item in enumerate(ranking, start=1):
            scores[item] += weight / (k + rank)
    return dict(scores)


def by_source(chunk_scores: Mapping[str, float], source_of: Mapping[str, str],
              top_n: int = 2, decay: float = 0.5) -> dict[str, float]:
    """A source's score is its best chunk's plus a decaying share of its next best ones
    (`decay` ** i for the i-th), so a source with several matching passages edges out one with a
    single lucky match, without long sources winning merely by having many chunks."""
    grouped: dict[str, list[float]] = defaultdict(list)
    for chunk_id, score in chunk_scores.items():
        grouped[source_of[chunk_id]].append(score)
    return {
        source: sum(s * decay**i for i, s in enumerate(sorted(scores, reverse=True)[:top_n]))
        for source, scores in grouped.items()
    }


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Best first; ties broken by id so results are reproducible."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
