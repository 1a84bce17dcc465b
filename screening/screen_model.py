"""The learned layer of the input screen: one classifier that reads an English user message and
says how likely it is a crisis, small talk, a request for advice on the writer's own case, or an
urgent situation (someone unwell now who needs help today, one of the own-case classes).

Features: word and character n-grams (robust to typos and slang) and, when the MiniLM embedder it
was trained with is available, the sentence embedding (screen_features.py). Messages in other
languages have their own variant: n-grams only (MiniLM reads English only), over the folded text
the language lexicon reads, so a crisis said in words the lexicon does not list is still caught.
Which reader a message gets is decided by a language identifier trained on the same messages
(screen_language.py).

This module is what the artefact is (its name, feature version and the data and settings its
hash covers) and how it is read at run time; screen_training.py fits it, and the fitted model is
an artefact (app/core/learning/artefacts.py), loaded here and never retrained at run time.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from app.core.config import REPO_ROOT
from app.core.learning import artefacts
from app.core.learning.logistic import Linear, predict_proba
from screening import crisis_languages
from screening.screen_features import (
    features,
    grouped,
    likeliest_kind,
    plain,
)
from screening.screen_language import is_english, likeliest_language

if TYPE_CHECKING:
    from app.core.learning.encoder import Encoder

NAME = "input_screen"
# 3: a personal-advice probability (the boundary classes) and its threshold;
# 4: a variant for other languages; coefficients stored at half precision; 5: a language identifier;
# 6: an urgent-situation probability (the class below) and its threshold; 7: which other language
FEATURE_VERSION = 7
TRAIN_DIRS = (REPO_ROOT / "scenarios" / "screen" / "train", REPO_ROOT / "scenarios" / "judges" / "train")
# How screen_training.py fits the model; hashed with the data, so a change here retrains it.
# Recall targets: in English a missed crisis gets an ordinary answer, so recall comes first; in
# other languages a miss still gets the "English only" notice, which carries the crisis contacts,
# as a false alarm's crisis reply does, so the two errors cost nearly the same there.
# Personal advice: a general question put on the boundary route loses its answer, so where F1 is
# flat (the thresholds within `personal_f1_tie` of the best) the highest threshold wins.
SETTINGS = {"c": 10.0, "folds": 5, "dev_share": 0.25, "recall_target": 0.96, "recall_target_other_languages": 0.93,
            "english_kept": 0.999, "personal_f1_tie": 0.005, "seed": 0}


@dataclass(frozen=True)
class Reading:
    crisis: float  # probability the message is a crisis
    small_talk: float  # probability it is small talk
    threshold: float  # crisis from here up
    confident: float  # a crisis this likely is never cleared by an LLM's second look
    second_look: float  # below the threshold but this likely: worth an LLM's second look
    personal: float = 0.0  # probability it asks for advice on the writer's own case
    personal_threshold: float = 1.0  # a personal-advice request from here up
    urgent: float = 0.0  # probability it describes someone unwell now who needs help today
    urgent_threshold: float = 1.0  # an urgent situation from here up
    small_talk_kind: str = ""  # the likeliest small-talk class's category ("farewell", "thanks", …)
    boundary_kind: str = ""  # the likeliest personal-advice class's category ("missed_dose", …)
    crisis_kind: str = ""  # the likeliest crisis class's category ("medical_emergency", …)

    @property
    def is_crisis(self) -> bool:
        return self.crisis >= self.threshold


# A deployment's own training messages, beside its knowledge base (same format as
# scenarios/screen/train): added to the product's, so `make train` fits the screen to them too.
DEPLOYMENT_TRAIN_DIR = "screen_training"


def training_files() -> list[Path]:
    """The product's training messages and the configured knowledge base's own."""
    from app.core.config import Settings

    own = Settings().knowledge_base / DEPLOYMENT_TRAIN_DIR
    return sorted(p for folder in (*TRAIN_DIRS, own) for p in folder.glob("*.jsonl"))


def current_hash() -> str | None:
    files = training_files()
    return artefacts.data_hash(files, SETTINGS) if files else None


def reading_features(res: Encoder, bundle: dict[str, Any], card: artefacts.ModelCard,
                     texts: list[str]) -> tuple[dict[str, Any], Any]:
    """The variant of a shipped bundle to read English `texts` with, and their features: the
    embedded variant only with the very embedder it was trained on, and while that embedder works
    (else the lexical variant decides)."""
    if ("embedded" in bundle and res.embeddings and res.embedder_name == card.embedder
            and (vectors := res.encode(texts)) is not None):
        return bundle["embedded"], features(bundle["embedded"]["vectoriser"], texts, vectors)
    return bundle["lexical"], features(bundle["lexical"]["vectoriser"], texts, None)


def ready_to_read(bundle: dict[str, Any]) -> dict[str, Any]:
    """A loaded bundle as plain data (one stored with scikit-learn's objects is converted) with
    every variant's weights laid out for scoring (`_columns_contiguous`)."""
    bundle = plain(bundle)
    for variant in bundle.values():
        if isinstance(variant, dict) and "classifier" in variant:
            _columns_contiguous(variant["classifier"])
    return bundle


def _columns_contiguous(classifier: Linear) -> None:
    """Weights laid out so that scoring reads them in place: scikit-learn multiplies the features
    by `coef_.T`, and scipy copies a transposed row-major matrix (73 classes x 52k features, 8 ms)
    at every message; column-major, `coef_.T` is already the layout it wants (0.3 ms). Weights
    stored at half precision (`packed`) are read at single precision, the values they were fitted as."""
    stored = classifier.coef_
    classifier.coef_ = np.asfortranarray(stored, dtype=np.float32 if stored.dtype == np.float16 else None)


def packed(bundle: dict[str, Any]) -> dict[str, Any]:
    """The bundle as stored: plain data (`plain`), and weights that half precision holds exactly
    (they are fitted rounded to it) stored so, half the bytes to read and unpack at start-up; the
    fitted bundle is unchanged."""
    stored = plain(bundle)
    for name, variant in stored.items():
        if not (isinstance(variant, dict) and "classifier" in variant):
            continue
        weights = variant["classifier"].coef_
        half = weights.astype(np.float16)
        if weights.dtype == np.float32 and np.array_equal(half.astype(np.float32), weights):
            classifier = copy.copy(variant["classifier"])
            # Column-major as stored, so that loading widens it in place (`_columns_contiguous`)
            # instead of transposing 73 x 52k weights at every start.
            classifier.coef_ = np.asfortranarray(half)
            stored[name] = {**variant, "classifier": classifier}
    return stored


class ScreenModel:
    """The shipped classifier, loaded once per process."""

    def __init__(self, res: Encoder, bundle: dict[str, Any], card: artefacts.ModelCard):
        self.res, self.bundle, self.card = res, ready_to_read(bundle), card

    @classmethod
    def load(cls, res: Encoder, folder: Path = artefacts.ARTEFACTS_DIR) -> ScreenModel:
        bundle, card = artefacts.load(NAME, feature_version=FEATURE_VERSION, current_hash=current_hash(),
                                      folder=folder)
        return cls(res, bundle, card)

    def read(self, normalised: str) -> Reading:
        """An English message, normalised as `crisis_text.normalise` does with the idiom mark."""
        return self._reading(*reading_features(self.res, self.bundle, self.card, [normalised]))

    def is_english(self, message: str) -> bool:
        """Whether a message is English, as written."""
        return is_english(self.bundle["language_id"], message)

    def language_of(self, message: str) -> str:
        """The likeliest of the other languages a message is in ("de", "hi", …), as written."""
        return likeliest_language(self.bundle["which_language"], [message])[0]

    def read_other_language(self, message: str) -> Reading:
        """A message in another language, as written."""
        variant = self.bundle["languages"]
        return self._reading(variant, features(variant["vectoriser"], [crisis_languages.fold(message)], None))

    @staticmethod
    def _reading(variant: dict[str, Any], x: Any) -> Reading:
        """A variant's reading of one message's features."""
        classifier = variant["classifier"]
        p = predict_proba(classifier, x)
        crisis, small, personal, urgent = grouped(classifier, p)
        return Reading(crisis=round(float(crisis[0]), 4), small_talk=round(float(small[0]), 4),
                       small_talk_kind=likeliest_kind(classifier, p, "small_talk")[0],
                       boundary_kind=likeliest_kind(classifier, p, "boundary")[0],
                       crisis_kind=likeliest_kind(classifier, p, "crisis")[0],
                       threshold=variant["threshold"], confident=variant["confident"],
                       second_look=variant["second_look"], personal=round(float(personal[0]), 4),
                       personal_threshold=variant["personal_threshold"], urgent=round(float(urgent[0]), 4),
                       urgent_threshold=variant["urgent_threshold"])
