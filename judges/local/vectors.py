"""Access to the shared sentence embedder for the local checks.

The checks never load a model themselves: they use the process-wide `Embedder` of the retrieval
package. Embeddings can be switched off (CAFBOT_LOCAL_EMBEDDINGS=0, or `set_enabled(False)` in
tests); the checks then fall back to their lexical layers, which is also what happens if the
model cannot be loaded, so tier 0 never fails because of the model.
"""

from __future__ import annotations

import logging
import os
from functools import cache

import numpy as np

log = logging.getLogger(__name__)
_state: dict[str, bool | None] = {"enabled": None, "broken": False}


def set_enabled(enabled: bool | None) -> None:
    """Force embeddings on or off; None goes back to the environment's choice."""
    _state["enabled"] = enabled


def enabled() -> bool:
    if _state["broken"]:
        return False
    if _state["enabled"] is not None:
        return bool(_state["enabled"])
    return os.environ.get("CAFBOT_LOCAL_EMBEDDINGS", "1").lower() not in ("0", "false", "no", "off")


def encode(texts: list[str]) -> np.ndarray | None:
    """Normalised vectors (rows), or None when embeddings are off or unavailable. Vectors are
    cached by the shared embedder: source sentences recur from turn to turn."""
    if not enabled():
        return None
    try:
        from app.retrieval.embeddings import Embedder

        return Embedder.get().encode(list(texts), cache=True)
    except Exception as error:  # a broken model must not break tier 0: fall back to lexical
        log.warning("local checks: embeddings unavailable, lexical layers only (%s)", error)
        _state["broken"] = True
        return None


@cache
def _prototype_vectors(key: tuple[str, ...]) -> np.ndarray | None:
    return encode(list(key))


def prototypes(texts: list[str]) -> np.ndarray | None:
    """Vectors of a fixed phrase list, computed once per process."""
    vectors = _prototype_vectors(tuple(texts))
    if vectors is None:
        _prototype_vectors.cache_clear()  # try again once embeddings are back on
    return vectors


def max_similarity(texts: list[str], against: list[str]) -> np.ndarray | None:
    """For each text, its highest cosine similarity to any phrase in `against`."""
    if not texts or not against:
        return np.zeros(len(texts), dtype=np.float32)
    proto = prototypes(against)
    vectors = encode(texts) if proto is not None else None
    if proto is None or vectors is None:
        return None
    return (vectors @ proto.T).max(axis=1)
