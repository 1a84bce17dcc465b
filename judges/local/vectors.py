"""Access to the shared sentence embedder for the local checks.

The checks never load a model themselves: they use the process-wide `Embedder` of the retrieval
package. Embeddings can be switched off (CAFBOT_LOCAL_EMBEDDINGS=0, or `set_enabled(False)` in
tests); the checks then fall back to their lexical layers, which is also what happens if the
model cannot be loaded, so tier 0 never fails because of the model.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from functools import cache

import numpy as np

log = logging.getLogger(__name__)
_state: dict[str, bool | None] = {"enabled": None, "broken": False}
_lock = threading.Lock()
# Source sentences recur from turn to turn (a knowledge base has a few hundred), and the checks of
# one draft embed the same sentences: remembering vectors keeps tier 0 in milliseconds.
_CACHE_SIZE = 8192
_cache: OrderedDict[str, np.ndarray] = OrderedDict()


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
    """Normalised vectors (rows), or None when embeddings are off or unavailable."""
    if not enabled():
        return None
    try:
        from app.retrieval.embeddings import Embedder

        with _lock:
            embedder = Embedder.get()
            missing = list(dict.fromkeys(t for t in texts if t not in _cache))
        if missing:  # one batch for everything new: far cheaper than one call per sentence
            for text, vector in zip(missing, embedder.encode(missing), strict=True):
                with _lock:
                    _cache[text] = vector
                    if len(_cache) > _CACHE_SIZE:
                        _cache.popitem(last=False)
        with _lock:
            rows = [_cache.get(t) for t in texts]
        if any(r is None for r in rows):  # evicted meanwhile by another thread: encode directly
            return embedder.encode(list(texts))
        return np.stack(rows) if rows else np.zeros((0, embedder.dimensions), dtype=np.float32)
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
