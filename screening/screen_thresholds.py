"""The input screen's lines, chosen on held-out readings of the train split (never on the
holdout), and the figures its model card reports for them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from screening.screen_features import URGENT_CLASS

if TYPE_CHECKING:
    from app.core.scenarios import Scenario


def recall_threshold(crisis: np.ndarray, is_crisis: np.ndarray, by_pattern: np.ndarray, target: float) -> float:
    """The highest threshold at which patterns and model together keep the dev recall target."""
    for t in np.round(np.arange(0.95, 0.04, -0.01), 2):
        caught = by_pattern | (crisis >= t)
        if caught[is_crisis].mean() >= target:
            return float(t)
    return 0.05


def f1_threshold(probability: np.ndarray, truth: np.ndarray, tie: float = 0.0) -> float:
    """The threshold with the best F1 on held-out readings (personal-advice requests, urgent
    situations); with `tie`, the highest within `tie` of the best (the lowest among equals otherwise)."""
    grid = np.round(np.arange(0.2, 0.91, 0.05), 2)
    scores = []
    for t in grid:
        flagged = probability >= t
        tp = float((flagged & truth).sum())
        scores.append(2 * tp / (flagged.sum() + truth.sum()) if (flagged.sum() + truth.sum()) else 0.0)
    best = max(scores)
    near = [float(t) for t, f1 in zip(grid, scores, strict=True) if f1 >= best - tie]
    return near[-1] if tie else near[0]


def with_thresholds(fitted: dict[str, Any], crisis: np.ndarray, truth: np.ndarray,
                    caught: np.ndarray, target: float) -> dict[str, Any]:
    """The crisis threshold and the lines either side of it, chosen on held-out readings."""
    threshold = recall_threshold(crisis, truth, caught, target)
    fitted["threshold"] = threshold
    fitted["confident"] = round(threshold + (1 - threshold) / 2, 3)
    fitted["second_look"] = round(threshold / 2, 3)
    return fitted


def dev_metrics(crisis: np.ndarray, small: np.ndarray, threshold: float, by_pattern: np.ndarray,
                dev: list[tuple[str, str, Scenario]], personal: np.ndarray,
                personal_threshold: float, urgent: np.ndarray, urgent_threshold: float) -> dict[str, Any]:
    flagged = by_pattern | (crisis >= threshold)
    truth = np.array([s.expected == "crisis" for _, _, s in dev])
    per_category: dict[str, dict[str, float]] = {}
    for category in sorted({s.category or "judge_scenario" for _, _, s in dev}):
        rows = np.array([(s.category or "judge_scenario") == category for _, _, s in dev])
        figures: dict[str, float] = {"n": int(rows.sum())}
        if (rows & truth).any():
            figures["crisis_recall"] = round(float(flagged[rows & truth].mean()), 3)
        if (rows & ~truth).any():
            figures["false_crisis_rate"] = round(float(flagged[rows & ~truth].mean()), 3)
        per_category[category] = figures
    small_truth = np.array([s.route == "small_talk" for _, _, s in dev])
    routed_small = (small >= 0.5) & ~flagged
    personal_truth = np.array([s.route == "boundary" for _, _, s in dev])
    routed_personal = (personal >= personal_threshold) & ~flagged
    urgent_truth = np.array([label == URGENT_CLASS for _, label, _ in dev])
    routed_urgent = (urgent >= urgent_threshold) & ~flagged
    return {
        "crisis_recall": round(float(flagged[truth].mean()), 3),
        "false_crisis_rate": round(float(flagged[~truth].mean()), 3),
        "model_alone_recall": round(float((crisis >= threshold)[truth].mean()), 3),
        "small_talk_recall": round(float(routed_small[small_truth].mean()), 3) if small_truth.any() else None,
        "small_talk_precision": round(float(small_truth[routed_small].mean()), 3) if routed_small.any() else None,
        "personal_advice_recall": round(float(routed_personal[personal_truth].mean()), 3) if personal_truth.any() else None,
        "personal_advice_precision": round(float(personal_truth[routed_personal].mean()), 3) if routed_personal.any() else None,
        "urgent_recall": round(float(routed_urgent[urgent_truth].mean()), 3) if urgent_truth.any() else None,
        "urgent_precision": round(float(urgent_truth[routed_urgent].mean()), 3) if routed_urgent.any() else None,
        "per_category": per_category,
    }
