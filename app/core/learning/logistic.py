"""Small fitting helpers shared by the learned checks (their artefacts: app/core/learning/artefacts.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

Weights = dict[str, Any]  # plain arrays and floats: what joblib stores


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression  # fitting only: reading needs numpy alone

    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000).fit(x, y)
    return model.coef_[0].astype(np.float32), float(model.intercept_[0])


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))
