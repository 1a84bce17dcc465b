"""Logistic models as the learned checks fit and read them: the binary fit, and a fitted
scikit-learn logistic regression as plain data (`Linear`) with its probabilities (`predict_proba`),
read without importing scikit-learn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit, softmax

Weights = dict[str, Any]  # plain arrays and floats: what joblib stores


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression  # fitting only: reading needs numpy alone

    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000).fit(x, y)
    return model.coef_[0].astype(np.float32), float(model.intercept_[0])


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


@dataclass
class Linear:
    """A fitted logistic regression as plain data: what `predict_proba` and the readers use."""

    coef_: np.ndarray
    intercept_: np.ndarray
    classes_: np.ndarray


def predict_proba(classifier: Linear, x: Any) -> np.ndarray:
    """`classifier.predict_proba(x)` without scikit-learn's per-call input checks (0.2 ms a
    message, twenty times the arithmetic): a logistic for two classes, a softmax for more, as
    scikit-learn computes them. tests/test_artefacts.py holds it equal to scikit-learn's."""
    scores = np.asarray(_as_weights(x) @ classifier.coef_.T) + classifier.intercept_
    if scores.shape[1] == 1:
        positive = expit(scores[:, 0])
        return np.column_stack([1 - positive, positive])
    return softmax(scores, axis=1)


def _as_weights(x: Any) -> Any:
    """Features in the weights' precision: a float64 matrix times the float32 weights makes a
    float64 copy of the weights (tens of thousands of rows) at every message."""
    return x.astype(np.float32)
