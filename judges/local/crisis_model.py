"""A learned layer of the crisis detector, for wording that no pattern lists.

Logistic regression over MiniLM embeddings of whole user messages, trained only on the train split
of scenarios/judges (positives: messages expected "crisis"; negatives: every other user message).
Its decision threshold is set by cross-validation on the training data: the highest recall whose
false-alarm rate on held-out non-crisis messages stays within `model_max_false_positive`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from judges.local import patterns
from judges.local.learned import (
    LearnedCheck,
    Weights,
    fit_logistic,
    out_of_fold_probability,
    sigmoid,
)

if TYPE_CHECKING:
    from judges.local.resources import Resources

FEATURE_VERSION = 3


def training_data(train_dir: Path) -> tuple[list[str], list[int]]:
    from judges.local.crisis import normalise
    from judges.scenarios import load_scenarios

    labelled: dict[str, int] = {}
    for scenario in load_scenarios(train_dir):
        text = normalise(scenario.user, remove_idioms=False)
        if text:  # a message seen as both keeps its crisis label: recall first
            labelled[text] = max(labelled.get(text, 0), int(scenario.expected == "crisis"))
    return list(labelled), list(labelled.values())


def train(x: np.ndarray, labels: list[int]) -> Weights | None:
    y = np.array(labels)
    if y.sum() < 10 or (1 - y).sum() < 10:
        return None
    c = patterns.threshold("crisis", "model_regularisation")
    # Out-of-fold probabilities of the non-crisis messages set the threshold for unseen wording:
    # as much recall as the false-alarm budget allows. The other layers already catch the clear
    # cases, and a crisis message sent to every worried question would teach people to ignore it.
    held_out = out_of_fold_probability(x, y, c)
    budget = patterns.threshold("crisis", "model_max_false_positive")
    threshold = float(np.quantile(held_out[y == 0], 1.0 - budget))
    threshold = max(threshold, patterns.threshold("crisis", "model_min_threshold"))
    coef, intercept = fit_logistic(x, y, c)
    return {"coef": coef, "intercept": intercept, "threshold": threshold}


class CrisisModel:
    def __init__(self, res: Resources, train_dir: Path, models_dir: Path | None):
        self.res = res
        self.check = LearnedCheck("crisis", key=lambda: self._key(train_dir), fit=lambda: self._fit(train_dir),
                                  cache_dir=models_dir)

    def _key(self, train_dir: Path) -> list:
        return [FEATURE_VERSION, *training_data(train_dir), patterns.data()["thresholds"]["crisis"]]

    def _fit(self, train_dir: Path) -> Weights | None:
        if not self.res.embeddings or not train_dir.is_dir():
            return None
        texts, labels = training_data(train_dir)
        x = self.res.encode(texts)
        return train(x, labels) if x is not None else None

    def probability(self, texts: list[str]) -> tuple[float, float] | None:
        """(highest crisis probability over the texts, the decision threshold), or None."""
        weights = self.check.weights() if self.res.embeddings else None
        if weights is None or not texts:
            return None
        embedded = self.res.encode(texts)
        if embedded is None:
            return None
        p = sigmoid(embedded @ weights["coef"] + weights["intercept"])
        return float(p.max()), float(weights["threshold"])


def learned(res: Resources, train_dir: Path, models_dir: Path | None) -> CrisisModel:
    return CrisisModel(res, train_dir, models_dir)
