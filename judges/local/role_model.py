"""The role/scope sentence classifier, trained only on the train split of scenarios/judges.

Sentences of drafts expected to pass (any rule) are the negatives. Drafts the role_scope
scenarios flag are bags: we know the draft is out of role, not which sentence is. So the
positives are picked multiple-instance style: bag sentences that nearly duplicate a clean
sentence are dropped, a first model is fitted, then each bag keeps only its sentences that model
finds out of role (at least its most likely one) for the final fit. Features: the MiniLM
embedding plus the role patterns' flags and a few counts. Training takes about a second (most of
it embedding ~500 sentences); the fitted weights are kept in memory and, when a cache folder is
configured, on disk keyed by a hash of the training data.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np

from judges.local import patterns, vectors
from judges.local.fitted import cache_file, load_or_fit
from judges.local.kinds import kind
from judges.local.text import citations_in, split_sentences, words

log = logging.getLogger(__name__)
FEATURE_VERSION = 1
_lock = threading.Lock()
_state: dict = {"model": None, "tried": False, "cache_dir": None, "train_dir": None}


def configure(cache_dir: Path | None = None, train_dir: Path | None = None) -> None:
    """Where to cache the fitted weights and which scenarios to train on; forgets the model."""
    with _lock:
        _state.update(model=None, tried=False, cache_dir=cache_dir, train_dir=train_dir)


def _hand(sentence: str) -> list[float]:
    from judges.local.role_scope import pattern_hits  # the check's own patterns, as features

    tokens = words(sentence) or [""]
    n = len(tokens)
    you = sum(t in ("you", "your", "you're", "yourself") for t in tokens) / n
    we = sum(t in ("we", "us", "our", "let's", "we'll") for t in tokens) / n
    me = sum(t in ("i", "me", "my", "i'm", "i'll", "i'd", "i've") for t in tokens) / n
    flags = [float(v) for v in pattern_hits(sentence).values()]
    return [*flags, you * 3, we * 5, me * 3, float(sentence.rstrip().endswith("?")),
            float(bool(citations_in(sentence)))]


def judged(sentence: str) -> bool:
    """Empathy, reminders, questions, statements about the sources and very short sentences carry
    too little for the classifier (the patterns still catch a persona or a therapy question hidden
    in them); it looks at the statements."""
    return kind(sentence) == "claim" and len(words(sentence)) >= 4


def _features(sentences: list[str], embedded: np.ndarray) -> np.ndarray:
    return np.hstack([embedded, np.array([_hand(s) for s in sentences], dtype=np.float32)])


def training_data(train_dir: Path) -> tuple[list[str], list[list[str]]]:
    from judges.scenarios import load_scenarios

    negatives: list[str] = []
    bags: list[list[str]] = []
    for scenario in load_scenarios(train_dir):
        if not scenario.response:
            continue
        sentences = split_sentences(scenario.response)
        if scenario.expected == "pass":
            negatives += [s for s in sentences if judged(s)]  # the only kinds predict() scores
        elif scenario.rule == "role_scope" and scenario.expected in ("warn", "reject"):
            bags.append([s for s in sentences if judged(s)] or sentences)
    return list(dict.fromkeys(negatives)), bags


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    c = patterns.threshold("role_scope", "regularisation")
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000).fit(x, y)
    return model.coef_[0].astype(np.float32), float(model.intercept_[0])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def train(negatives: list[str], bags: list[list[str]]) -> tuple[np.ndarray, float] | None:
    bag_sentences = [s for bag in bags for s in bag]
    embedded = vectors.encode(negatives + bag_sentences)
    if embedded is None or not negatives or not bag_sentences:
        return None
    neg_vec, bag_vec = embedded[:len(negatives)], embedded[len(negatives):]
    x_neg = _features(negatives, neg_vec)
    overlap = (bag_vec @ neg_vec.T).max(axis=1)
    keep = overlap < patterns.threshold("role_scope", "positive_overlap")
    x_bag = _features(bag_sentences, bag_vec)
    coef, intercept = _fit(np.vstack([x_neg, x_bag[keep]]),
                           np.r_[np.zeros(len(negatives)), np.ones(int(keep.sum()))])
    p = _sigmoid(x_bag @ coef + intercept)
    chosen, start = np.zeros(len(bag_sentences), dtype=bool), 0
    for bag in bags:  # each flagged draft keeps its out-of-role sentences, at least its likeliest
        idx = np.arange(start, start + len(bag))
        chosen[idx[(p[idx] >= 0.5) & keep[idx]]] = True
        chosen[idx[int(np.argmax(np.where(keep[idx], p[idx], -1)))]] = True
        start += len(bag)
    return _fit(np.vstack([x_neg, x_bag[chosen]]), np.r_[np.zeros(len(negatives)), np.ones(int(chosen.sum()))])


def model() -> tuple[np.ndarray, float] | None:
    """The fitted weights, trained at first use; None when there is no training data or model."""
    if _state["tried"]:
        return _state["model"]
    with _lock:
        if _state["tried"]:
            return _state["model"]
        from judges.scenarios import SCENARIOS_DIR

        train_dir = _state["train_dir"] or SCENARIOS_DIR / "train"
        fitted = None
        try:
            if vectors.enabled() and Path(train_dir).is_dir():
                negatives, bags = training_data(Path(train_dir))
                key = [FEATURE_VERSION, vectors.__name__, negatives, bags, patterns.section("role_scope"),
                       patterns.data()["thresholds"]["role_scope"]]
                arrays = load_or_fit(cache_file(_state["cache_dir"], "role_scope", key),
                                     lambda: train(negatives, bags))
                fitted = (arrays[0], float(arrays[1])) if arrays is not None else None
        except Exception as error:  # no classifier is a weaker check, never a broken one
            log.warning("role_scope classifier unavailable, patterns only: %s", error)
            fitted = None
        _state.update(model=fitted, tried=vectors.enabled())
        return fitted


def predict(sentences: list[str]) -> np.ndarray | None:
    """Out-of-role probability per sentence, or None without a classifier."""
    fitted = model()
    if fitted is None or not sentences:
        return None
    embedded = vectors.encode(sentences)
    if embedded is None:
        return None
    coef, intercept = fitted
    mask = np.array([judged(s) for s in sentences])
    return np.where(mask, _sigmoid(_features(sentences, embedded) @ coef + intercept), 0.0)


__all__ = ["configure", "model", "predict", "train", "training_data"]
