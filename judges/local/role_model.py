"""The role/scope sentence classifier, trained only on the train split of scenarios/judges.

Sentences of drafts expected to pass (any rule) are the negatives. Drafts the role_scope
scenarios flag are bags: we know the draft is out of role, not which sentence is. So the
positives are picked multiple-instance style: bag sentences that nearly duplicate a clean
sentence are dropped, a first model is fitted, then each bag keeps only its sentences that model
finds out of role (at least its most likely one) for the final fit. Features: the MiniLM
embedding plus the role patterns' flags and a few counts. `cafbot judges train` fits it and
ships the weights as an artefact (app/core/learning/artefacts.py); run time only loads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.core.config import REPO_ROOT
from app.core.learning import artefacts
from app.core.learning.logistic import Weights, fit_logistic, sigmoid
from app.core.text import citations_in, split_sentences, words
from judges.local import patterns
from judges.local.kinds import kind
from judges.local.role_patterns import pattern_hits  # the check's own patterns, as features

if TYPE_CHECKING:
    from app.core.learning.encoder import Encoder

NAME = "role_scope"
FEATURE_VERSION = 3
TRAIN_DIR = REPO_ROOT / "scenarios" / "judges" / "train"


def _hand(sentence: str) -> list[float]:
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
    from app.core.scenarios import load_scenarios

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


def train(x_neg: np.ndarray, x_bag: np.ndarray, keep: np.ndarray, bags: list[list[str]]) -> Weights:
    """Multiple-instance fit: a first model on every kept bag sentence, then each flagged draft
    keeps its out-of-role sentences (at least its likeliest) for the final fit."""
    c = patterns.threshold("role_scope", "regularisation")
    coef, intercept = fit_logistic(np.vstack([x_neg, x_bag[keep]]),
                                   np.r_[np.zeros(len(x_neg)), np.ones(int(keep.sum()))], c)
    p = sigmoid(x_bag @ coef + intercept)
    chosen, start = np.zeros(len(x_bag), dtype=bool), 0
    for bag in bags:
        idx = np.arange(start, start + len(bag))
        chosen[idx[(p[idx] >= 0.5) & keep[idx]]] = True
        chosen[idx[int(np.argmax(np.where(keep[idx], p[idx], -1)))]] = True
        start += len(bag)
    coef, intercept = fit_logistic(np.vstack([x_neg, x_bag[chosen]]),
                                   np.r_[np.zeros(len(x_neg)), np.ones(int(chosen.sum()))], c)
    return {"coef": coef, "intercept": intercept}


def current_hash() -> str | None:
    files = sorted(TRAIN_DIR.glob("*.jsonl"))
    return artefacts.data_hash(files, [patterns.section("role_scope"), patterns.data()["thresholds"]["role_scope"]]) \
        if files else None


def fit_and_save(encode, embedder_name: str, out_dir: Path = artefacts.ARTEFACTS_DIR) -> artefacts.ModelCard:
    """Fit on the train split and write the artefact. `encode`: texts -> normalised vectors."""
    negatives, bags = training_data(TRAIN_DIR)
    bag_sentences = [s for bag in bags for s in bag]
    embedded = encode(negatives + bag_sentences)
    neg_vec, bag_vec = embedded[:len(negatives)], embedded[len(negatives):]
    keep = (bag_vec @ neg_vec.T).max(axis=1) < patterns.threshold("role_scope", "positive_overlap")
    weights = train(_features(negatives, neg_vec), _features(bag_sentences, bag_vec), keep, bags)
    card = artefacts.ModelCard(
        name=NAME, feature_version=FEATURE_VERSION, data_hash=current_hash() or "",
        data_files=[str(p.relative_to(REPO_ROOT)) for p in sorted(TRAIN_DIR.glob("*.jsonl"))],
        split_sizes={"clean_sentences": len(negatives), "flagged_drafts": len(bags),
                     "bag_sentences": len(bag_sentences)},
        dev_metrics={}, thresholds={k: float(v) for k, v in patterns.data()["thresholds"]["role_scope"].items()},
        embedder=embedder_name,
        notes=("Multiple-instance logistic regression over sentence embeddings and the role "
               "patterns' flags; its warn/reject thresholds were chosen by leave-one-rule-file-out "
               "cross-validation on the train split (patterns.yaml thresholds.role_scope)."))
    artefacts.save(NAME, weights, card, out_dir, compress=artefacts.FAST_TO_LOAD)
    return card


class RoleModel:
    def __init__(self, res: Encoder, weights: Weights, card: artefacts.ModelCard):
        self.res, self.weights, self.card = res, weights, card

    @classmethod
    def load(cls, res: Encoder, folder: Path = artefacts.ARTEFACTS_DIR) -> RoleModel:
        weights, card = artefacts.load(NAME, feature_version=FEATURE_VERSION, current_hash=current_hash(),
                                       folder=folder)
        return cls(res, weights, card)

    def predict(self, sentences: list[str]) -> np.ndarray | None:
        """Out-of-role probability per sentence, or None without the embedder it was trained on."""
        if not sentences or not self.res.embeddings or self.res.embedder_name != self.card.embedder:
            return None
        embedded = self.res.encode(sentences)
        if embedded is None:
            return None
        mask = np.array([judged(s) for s in sentences])
        p = sigmoid(_features(sentences, embedded) @ self.weights["coef"] + self.weights["intercept"])
        return np.where(mask, p, 0.0)
