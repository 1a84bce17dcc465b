"""A learned layer of the crisis detector, for wording that no pattern lists.

Logistic regression over MiniLM embeddings of whole user messages, trained only on the train split
of scenarios/judges (positives: messages expected "crisis"; negatives: every other user message).
Its decision threshold is set by cross-validation on the training data: the highest recall whose
false-alarm rate on held-out non-crisis messages stays within `model_max_false_positive`. Fitted weights are cached
in memory and, when a cache folder is configured, on disk keyed by a hash of the training data.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np

from judges.local import patterns, vectors
from judges.local.fitted import cache_file, load_or_fit

log = logging.getLogger(__name__)
FEATURE_VERSION = 2
_lock = threading.Lock()
_state: dict = {"model": None, "tried": False, "cache_dir": None, "train_dir": None}
Model = tuple[np.ndarray, float, float]  # coefficients, intercept, decision threshold


def configure(cache_dir: Path | None = None, train_dir: Path | None = None) -> None:
    with _lock:
        _state.update(model=None, tried=False, cache_dir=cache_dir, train_dir=train_dir)


def training_data(train_dir: Path) -> tuple[list[str], list[int]]:
    from judges.local.crisis import normalise
    from judges.scenarios import load_scenarios

    labelled: dict[str, int] = {}
    for scenario in load_scenarios(train_dir):
        text = normalise(scenario.user, remove_idioms=False)
        if text:  # a message seen as both keeps its crisis label: recall first
            labelled[text] = max(labelled.get(text, 0), int(scenario.expected == "crisis"))
    return list(labelled), list(labelled.values())


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    c = patterns.threshold("crisis", "model_regularisation")
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000).fit(x, y)
    return model.coef_[0].astype(np.float32), float(model.intercept_[0])


def _probability(x: np.ndarray, coef: np.ndarray, intercept: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ coef + intercept)))


def train(texts: list[str], labels: list[int]) -> Model | None:
    y = np.array(labels)
    if y.sum() < 10 or (1 - y).sum() < 10:
        return None
    x = vectors.encode(texts)
    if x is None:
        return None
    # Out-of-fold probabilities of the crisis messages set the threshold for unseen wording.
    rng = np.random.default_rng(0)
    folds = rng.permutation(len(y)) % 5
    held_out = np.zeros(len(y))
    for fold in range(5):
        train_rows, test_rows = folds != fold, folds == fold
        coef, intercept = _fit(x[train_rows], y[train_rows])
        held_out[test_rows] = _probability(x[test_rows], coef, intercept)
    # As much recall as the false-alarm budget allows: the other layers already catch the clear
    # cases, and a crisis message sent to every worried question would teach people to ignore it.
    budget = patterns.threshold("crisis", "model_max_false_positive")
    threshold = float(np.quantile(held_out[y == 0], 1.0 - budget))
    threshold = max(threshold, patterns.threshold("crisis", "model_min_threshold"))
    coef, intercept = _fit(x, y)
    return coef, intercept, threshold


def model() -> Model | None:
    if _state["tried"]:
        return _state["model"]
    with _lock:
        if _state["tried"]:
            return _state["model"]
        from judges.scenarios import SCENARIOS_DIR

        train_dir = Path(_state["train_dir"] or SCENARIOS_DIR / "train")
        fitted = None
        try:
            if vectors.enabled() and train_dir.is_dir():
                texts, labels = training_data(train_dir)
                key = [FEATURE_VERSION, texts, labels, patterns.data()["thresholds"]["crisis"]]
                arrays = load_or_fit(cache_file(_state["cache_dir"], "crisis", key),
                                     lambda: train(texts, labels))
                fitted = (arrays[0], float(arrays[1]), float(arrays[2])) if arrays is not None else None
        except Exception as error:  # the patterns still stand without this layer
            log.warning("crisis classifier unavailable, patterns only: %s", error)
            fitted = None
        _state.update(model=fitted, tried=vectors.enabled())
        return fitted


def probability(texts: list[str]) -> tuple[float, float] | None:
    """(highest crisis probability over the texts, the decision threshold), or None."""
    fitted = model()
    if fitted is None or not texts:
        return None
    embedded = vectors.encode(texts)
    if embedded is None:
        return None
    coef, intercept, threshold = fitted
    return float(_probability(embedded, coef, intercept).max()), threshold
