"""Weights of the learned local checks, fitted once and kept on disk.

A fit is keyed by a hash of everything it depends on (training data, thresholds, feature version),
so a changed scenario file or threshold retrains, and an unchanged one loads in milliseconds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def cache_file(cache_dir: Path | None, name: str, key: Any) -> Path | None:
    if cache_dir is None:
        return None
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return Path(cache_dir) / f"{name}-{digest}.npz"


def load_or_fit(cache: Path | None, fit: Callable[[], tuple[np.ndarray, ...] | None]) -> tuple[np.ndarray, ...] | None:
    """The cached arrays, or fit() saved for next time. Arrays come back in the order fit() gave."""
    if cache is not None and cache.is_file():
        saved = np.load(cache)
        return tuple(saved[f"a{i}"] for i in range(len(saved.files)))
    arrays = fit()
    if arrays is not None and cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, **{f"a{i}": np.asarray(a) for i, a in enumerate(arrays)})
    return arrays
