"""The one lifecycle of a learned local check: gather training data, fit, keep the weights.

A learned check names its training data and its fit; this module keys the fitted weights by a
hash of everything they depend on (data, thresholds, feature version) and keeps them on disk with
joblib, so a changed scenario file retrains and an unchanged one loads in milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import joblib
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict

log = logging.getLogger(__name__)
Weights = dict[str, Any]  # plain arrays and floats: what joblib stores


def logistic(c: float) -> LogisticRegression:
    return LogisticRegression(C=c, class_weight="balanced", max_iter=2000)


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    model = logistic(c).fit(x, y)
    return model.coef_[0].astype(np.float32), float(model.intercept_[0])


def out_of_fold_probability(x: np.ndarray, y: np.ndarray, c: float, folds: int = 5) -> np.ndarray:
    """Each row's probability from a model that did not see it: how the fit does on unseen wording."""
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=0)
    return cross_val_predict(logistic(c), x, y, cv=cv, method="predict_proba")[:, 1]


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


@dataclass
class LearnedCheck:
    """A fitted model loaded at most once per owner. `key()` names what the fit depends on;
    `fit()` returns the weights, or None when there is nothing to learn from."""

    name: str
    key: Callable[[], Any]
    fit: Callable[[], Weights | None]
    cache_dir: Path | None = None
    _weights: Weights | None = field(default=None, init=False)
    _tried: bool = field(default=False, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def weights(self) -> Weights | None:
        if self._tried:
            return self._weights
        with self._lock:
            if not self._tried:
                try:
                    self._weights = self._load_or_fit()
                except Exception as error:  # no classifier is a weaker check, never a broken one
                    log.warning("%s classifier unavailable, patterns only: %s", self.name, error)
                    self._weights = None
                self._tried = True
        return self._weights

    def _load_or_fit(self) -> Weights | None:
        path = self._cache_path()
        if path is not None and path.is_file():
            return joblib.load(path)
        weights = self.fit()
        if weights is not None and path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            joblib.dump(weights, path)
        return weights

    def _cache_path(self) -> Path | None:
        if self.cache_dir is None:
            return None
        key = json.dumps(self.key(), sort_keys=True, default=str).encode()
        return self.cache_dir / f"{self.name}-{hashlib.sha256(key).hexdigest()[:16]}.joblib"
