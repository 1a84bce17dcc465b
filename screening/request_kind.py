"""The kind of a request about one's own case ("missed_dose", "switch", "therapy_request", …), which
decides the boundary card that answers it.

Its own classifier, trained on requests alone: the input screen's boundary messages and the
kind-labelled requests of scenarios/screen/kinds/. The screen decides whether a message is such a
request at all; kinds are read here, so data that teaches them apart cannot move the screen's line
between a request and a general question (two such sets, added to the screen's data, pushed general
medicine questions onto the boundary route). Same features as the screen (word and character
n-grams, and the MiniLM embedding when the embedder it was trained with is available), read with
idioms as what they say (`as_read`); seeded, cross-validated for its model card, shipped as an
artefact (app/core/learning/artefacts.py).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from app.core.config import REPO_ROOT
from app.core.learning import artefacts
from app.core.learning.logistic import predict_proba
from screening import screen_features, screen_model
from screening.crisis_text import normalise

if TYPE_CHECKING:
    from app.core.learning.encoder import Encoder

NAME = "request_kind"
FEATURE_VERSION = 3  # 2: idioms read as said; 3: as what they say
KINDS_DIR = REPO_ROOT / "scenarios" / "screen" / "kinds"
SETTINGS = {"c": 10.0, "folds": 5, "seed": 0}
# A second kind at least this share as likely as the first is read too: the card nearest the
# message among both kinds' cards answers ("slept through my evening tablet, should I have two
# tomorrow morning?" is a dose question by its words and a missed dose by its situation).
CLOSE_KIND = 0.5


def kinds_files() -> list[Path]:
    return sorted(KINDS_DIR.glob("*.jsonl"))


def training_files() -> list[Path]:
    return [*screen_model.training_files(), *kinds_files()]


def current_hash() -> str | None:
    files = training_files()
    return artefacts.data_hash(files, SETTINGS) if files else None


def as_read(text: str) -> str:
    """A request as this model reads it: normalised as the screen reads it, with idioms read as
    what they say. The screen marks "cut down on" so it never reads as harm; here it says what
    is asked ("can I cut down on risperidone?" is a request to reduce, not to switch)."""
    return normalise(text, idioms="read")


def training_requests() -> list[tuple[str, str]]:
    """(text as read, kind) for every request the kinds are learned from: the screen's boundary
    messages first (a text seen twice keeps its first kind), then the kind-labelled requests."""
    from app.core.scenarios import load_scenarios
    from screening import screen_training

    found: dict[str, str] = {}
    for _, label, scenario in screen_training.training_messages():
        if label.startswith("boundary:"):
            found.setdefault(as_read(scenario.user), label.split(":", 1)[1])
    for scenario in load_scenarios(kinds_files()):
        if scenario.route == "boundary" and scenario.category and (text := as_read(scenario.user)):
            found.setdefault(text, scenario.category)
    return list(found.items())


def _cross_validated(x: Any, kinds: list[str]) -> list[str]:
    """Each request's kind as read by a model fitted on the other folds."""
    # Fitting only: reading a request needs neither scikit-learn nor the screen's training code.
    from sklearn.model_selection import StratifiedKFold

    from screening import screen_training

    read = [""] * len(kinds)
    folds = StratifiedKFold(SETTINGS["folds"], shuffle=True, random_state=SETTINGS["seed"])
    for train_rows, dev_rows in folds.split(np.zeros(len(kinds)), kinds):
        classifier = screen_training.fit_classifier(x[train_rows], [kinds[i] for i in train_rows], c=SETTINGS["c"])
        classes = classifier.classes_
        for row, p in zip(dev_rows, predict_proba(classifier, x[dev_rows]), strict=True):
            read[row] = str(classes[int(np.argmax(p))])
    return read


def _metrics(truth: list[str], read: list[str]) -> dict[str, Any]:
    per_kind = {kind: {"n": n, "recall": round(sum(r == kind for t, r in zip(truth, read, strict=True) if t == kind) / n, 3)}
                for kind, n in sorted(Counter(truth).items())}
    return {"accuracy": round(float(np.mean([t == r for t, r in zip(truth, read, strict=True)])), 3),
            "per_category": per_kind}


def train(encode: Any | None, embedder_name: str, out_dir: Path = artefacts.ARTEFACTS_DIR) -> artefacts.ModelCard:
    """Fit the lexical variant and, with `encode`, the embedded one; the card reports each one's
    cross-validated accuracy per kind."""
    data_hash = current_hash() or ""  # of the data as read now, not as it may be when the fit ends
    requests = training_requests()
    texts, kinds = [t for t, _ in requests], [k for _, k in requests]
    from screening import screen_training

    vectoriser = screen_features.plain(screen_features.ngram_vectoriser().fit(texts))
    bundle: dict[str, Any] = {}
    metrics: dict[str, Any] = {}
    for variant, encoder in [("lexical", None), *([("embedded", encode)] if encode is not None else [])]:
        x = screen_features.features(vectoriser, texts, encoder(texts) if encoder else None)
        metrics[variant] = _metrics(kinds, _cross_validated(x, kinds))
        bundle[variant] = {"vectoriser": vectoriser,
                           "classifier": screen_training.fit_classifier(x, kinds, c=SETTINGS["c"])}
    card = artefacts.ModelCard(
        name=NAME, feature_version=FEATURE_VERSION, data_hash=data_hash,
        data_files=[str(p.relative_to(REPO_ROOT)) for p in training_files()],
        split_sizes={"requests": len(requests), "folds": SETTINGS["folds"],
                     **{f"kind.{k}": n for k, n in sorted(Counter(kinds).items())}},
        dev_metrics=metrics, thresholds={}, embedder=embedder_name if encode is not None else "",
        notes=("Logistic regression over word and character n-grams (+ MiniLM embedding in the 'embedded' "
               "variant), one class per kind of request, fitted on requests alone. Dev metrics are "
               f"cross-validated. Settings: {SETTINGS}."))
    artefacts.save(NAME, screen_features.plain(bundle), card, out_dir, compress=artefacts.FAST_TO_LOAD)
    return card


class RequestKindModel:
    """The shipped classifier, loaded once per process."""

    def __init__(self, res: Encoder, bundle: dict[str, Any], card: artefacts.ModelCard):
        self.res, self.bundle, self.card = res, screen_model.ready_to_read(bundle), card

    @classmethod
    def load(cls, res: Encoder, folder: Path = artefacts.ARTEFACTS_DIR) -> RequestKindModel:
        bundle, card = artefacts.load(NAME, feature_version=FEATURE_VERSION, current_hash=current_hash(),
                                      folder=folder)
        return cls(res, bundle, card)

    @property
    def kinds(self) -> list[str]:
        """Every kind of request it tells apart."""
        return sorted(str(kind) for kind in self.bundle["lexical"]["classifier"].classes_)

    def read(self, read_text: str) -> list[str]:
        """The likeliest kind of an English request, and any kind nearly as likely (`CLOSE_KIND`);
        the text as `as_read` gives it (without an idiom, the screen's, whose vector the embedder
        caches)."""
        variant, x = screen_model.reading_features(self.res, self.bundle, self.card, [read_text])
        classifier = variant["classifier"]
        p = predict_proba(classifier, x)[0]
        order = np.argsort(-p)
        return [str(classifier.classes_[i]) for i in order[:2] if p[i] >= CLOSE_KIND * p[order[0]]]
