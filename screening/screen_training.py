"""Fitting the input screen's classifier (screening/screen_model.py) and writing it, with its
model card, as an artefact (app/core/learning/artefacts.py). Run by `cafbot judges train`, never at run
time.

It learns from the train split of scenarios/screen (deliberately diverse: crisis of every kind,
small talk, idioms, everyday complaints, health and carer questions) plus the user-only messages
of scenarios/judges/train. Its classes are fine-grained (each crisis category; each route and
category of the rest), so the model learns what an everyday complaint or an idiom looks like
instead of "not a health question"; the crisis probability is the sum of the crisis classes. The
other-language variant and the two language identifiers are fitted on the same messages.

Thresholds are chosen on cross-validated readings of the train split (never on the holdout): each
message is read by a model fitted on the other folds, and the crisis threshold is the highest that
keeps the screen's recall on those readings (patterns and model together, as a user turn runs
them) at `recall_target`; the shipped model averages the folds' models.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, train_test_split

from app.core.config import REPO_ROOT
from app.core.learning import artefacts
from app.core.learning.logistic import predict_proba
from screening import crisis_languages
from screening.crisis_text import normalise, pattern_hit
from screening.screen_features import (
    URGENT_CLASS,
    NgramFeatures,
    features,
    grouped,
    ngram_vectoriser,
    plain,
)
from screening.screen_language import english_probability, likeliest_language, too_short_to_judge
from screening.screen_model import (
    FEATURE_VERSION,
    NAME,
    SETTINGS,
    current_hash,
    packed,
    training_files,
)
from screening.screen_thresholds import (
    dev_metrics,
    f1_threshold,
    recall_threshold,
    with_thresholds,
)

if TYPE_CHECKING:
    from app.core.scenarios import Scenario


def label(scenario: Scenario) -> str:
    if scenario.expected == "crisis":
        return f"crisis:{scenario.category or 'judge_scenario'}"
    return f"{scenario.route or 'question'}:{scenario.category or 'judge_scenario'}"


def training_messages(*, english: bool = True) -> list[tuple[str, str, Scenario]]:
    """(normalised text, class, scenario) for every user message the screen learns from, in English
    or in the other languages: screen scenarios, and judge scenarios that judge the user message
    alone. A message seen twice keeps its first label; the crisis one when they disagree (recall
    first)."""
    from app.core.scenarios import load_scenarios

    found: dict[str, tuple[str, str, Scenario]] = {}
    for scenario in load_scenarios(training_files()):
        if (scenario.language == "en") != english or (scenario.response is not None and scenario.route is None):
            continue
        text = normalise(scenario.user, idioms="marked") if english else crisis_languages.fold(scenario.user)
        if text and (text not in found or scenario.expected == "crisis"):
            found[text] = (text, label(scenario), scenario)
    return list(found.values())


def language_rows() -> list[tuple[str, str, Scenario]]:
    """(message as written, "en" or "other", scenario) for the language identifier: each message
    whose script and length do not already decide."""
    from app.core.scenarios import load_scenarios

    found: dict[str, tuple[str, str, Scenario]] = {}
    for scenario in load_scenarios(training_files()):
        if too_short_to_judge(scenario.user) is None:
            found.setdefault(scenario.user, (scenario.user, "en" if scenario.language == "en" else "other", scenario))
    return list(found.values())


def fit_classifier(x: Any, labels: list[str], c: float = SETTINGS["c"]) -> LogisticRegression:
    classifier = LogisticRegression(C=c, class_weight="balanced", max_iter=5000)
    classifier.fit(x, labels)
    # Half precision is plenty for these weights and makes the shipped artefact a third of the
    # size; rounded before anything is scored, so the card describes weights as they ship.
    classifier.coef_ = classifier.coef_.astype(np.float16).astype(np.float32)
    return classifier


def _cross_fit(vectoriser: NgramFeatures, x: Any, labels: list[str]
               ) -> tuple[dict[str, Any], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """One classifier per fold, each scoring the messages it did not see; the shipped classifier
    averages their weights (the mean of their logits). Every message then serves both to fit
    and to choose thresholds, and a model that averages five fits moves less when a few hundred
    messages are added than one fit on a single split did."""
    labels = _mergeable(labels)
    folds = StratifiedKFold(SETTINGS["folds"], shuffle=True, random_state=SETTINGS["seed"])
    probabilities = tuple(np.zeros(x.shape[0]) for _ in range(4))
    fitted: list[LogisticRegression] = []
    for train_rows, dev_rows in folds.split(np.zeros(len(labels)), labels):
        classifier = fit_classifier(x[train_rows], [labels[i] for i in train_rows])
        for total, part in zip(probabilities, _class_probabilities(classifier, x[dev_rows]), strict=True):
            total[dev_rows] = part
        fitted.append(classifier)
    averaged = copy.deepcopy(fitted[0])
    averaged.coef_ = np.mean([c.coef_ for c in fitted], axis=0).astype(np.float16).astype(np.float32)
    averaged.intercept_ = np.mean([c.intercept_ for c in fitted], axis=0)
    return {"vectoriser": vectoriser, "classifier": averaged}, tuple(probabilities)


def _mergeable(labels: list[str]) -> list[str]:
    """Classes too small for every fold to see them join their kind's catch-all class."""
    counts = {c: labels.count(c) for c in set(labels)}
    return [c if counts[c] >= 2 * SETTINGS["folds"] else f"{c.split(':')[0]}:other" for c in labels]


def _probabilities(variant: dict[str, Any], texts: list[str], embedded: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(crisis, small talk, personal advice, urgent situation) probability per text."""
    return _class_probabilities(variant["classifier"], features(variant["vectoriser"], texts, embedded))


def _class_probabilities(classifier: LogisticRegression, x: Any
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return grouped(classifier, predict_proba(classifier, x))


def _train_languages(bundle: dict[str, Any], card_metrics: dict[str, Any], thresholds: dict[str, float],
                     split_sizes: dict[str, int]) -> None:
    """The variant for messages in other languages: n-grams of the folded text, thresholds counting
    the language lexicon's hits, as the screen runs them. Its classes are the routes alone (a few
    dozen messages per language cannot teach each crisis kind), and its character n-grams are
    shorter: on a dev split of nineteen languages both gave fewer false alarms at the same recall."""
    messages = [(text, f"{kind.split(':')[0]}:all", scenario)
                for text, kind, scenario in training_messages(english=False)]
    texts = [t for t, _, _ in messages]
    vectoriser = plain(ngram_vectoriser(chars=(1, 3)).fit(texts))
    fitted, (crisis, small, personal, urgent) = _cross_fit(
        vectoriser, features(vectoriser, texts, None), [c for _, c, _ in messages])
    truth = np.array([s.expected == "crisis" for _, _, s in messages])
    by_lexicon = np.array([crisis_languages.find(s.user) is not None for _, _, s in messages])
    fitted = with_thresholds(fitted, crisis, truth, by_lexicon, SETTINGS["recall_target_other_languages"])
    # Other languages get the "English only" notice, not advice.
    fitted["personal_threshold"] = fitted["urgent_threshold"] = 1.0
    bundle["languages"] = fitted
    thresholds["languages.crisis"] = fitted["threshold"]
    card_metrics["languages"] = dev_metrics(crisis, small, fitted["threshold"], by_lexicon, messages,
                                            personal, 1.0, urgent, 1.0)
    card_metrics["languages"]["lexicon_alone_recall"] = round(float(by_lexicon[truth].mean()), 3)
    split_sizes.update(languages=len(messages), languages_crisis=int(truth.sum()))


def _train_language_id(bundle: dict[str, Any], card_metrics: dict[str, Any], thresholds: dict[str, float],
                       split_sizes: dict[str, int]) -> None:
    """Is a message English? Character n-grams, accents kept (they tell languages apart); the
    threshold is the highest that keeps `english_kept` of the dev split's English messages English:
    an English message taken for another language gets the "English only" notice, while another
    language taken for English still meets the crisis screen and a "not covered" reply."""
    rows = language_rows()
    train_rows, dev_rows = train_test_split(rows, test_size=SETTINGS["dev_share"], random_state=SETTINGS["seed"],
                                            stratify=[language for _, language, _ in rows])
    vectoriser = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4), sublinear_tf=True, min_df=2)
    texts = [t for t, _, _ in train_rows]
    classifier = fit_classifier(vectoriser.fit_transform(texts), [c for _, c, _ in train_rows])
    fitted = {"vectoriser": plain(vectoriser), "classifier": classifier}
    english = english_probability(fitted, [t for t, _, _ in dev_rows])
    truth = np.array([c == "en" for _, c, _ in dev_rows])
    # The same scan as the crisis thresholds, with "English" for "crisis" and nothing else to help.
    threshold = recall_threshold(english, truth, np.zeros_like(truth), SETTINGS["english_kept"])
    fitted["threshold"] = threshold
    bundle["language_id"] = fitted
    thresholds["language_id.english"] = threshold
    card_metrics["language_id"] = {
        "english_kept": round(float((english[truth] >= threshold).mean()), 4),
        "other_languages_caught": round(float((english[~truth] < threshold).mean()), 4)}
    split_sizes.update(language_id_train=len(train_rows), language_id_dev=len(dev_rows))


def _train_which_language(bundle: dict[str, Any], card_metrics: dict[str, Any], split_sizes: dict[str, int]) -> None:
    """Which of the other languages a message is in, so that a crisis the lexicon does not list is
    still answered in the writer's language: character n-grams of the message as written, fitted
    on the other-language messages (transliterations labelled by their language)."""
    rows = [(s.user, s.language) for _, _, s in training_messages(english=False)]
    train_rows, dev_rows = train_test_split(rows, test_size=SETTINGS["dev_share"], random_state=SETTINGS["seed"],
                                            stratify=[language for _, language in rows])
    vectoriser = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4), sublinear_tf=True, min_df=2)
    classifier = fit_classifier(vectoriser.fit_transform([t for t, _ in train_rows]), [c for _, c in train_rows])
    fitted = {"vectoriser": plain(vectoriser), "classifier": classifier}
    read = likeliest_language(fitted, [t for t, _ in dev_rows])
    card_metrics["which_language"] = {"accuracy": round(float(np.mean([r == c for r, (_, c) in zip(read, dev_rows, strict=True)])), 4)}
    # The shipped identifier learns from every message; the dev figure is the split's.
    fitted["classifier"] = fit_classifier(vectoriser.fit_transform([t for t, _ in rows]), [c for _, c in rows])
    fitted["vectoriser"] = plain(vectoriser)  # refitted on them all
    bundle["which_language"] = fitted
    split_sizes.update(which_language=len(rows))


def train(encode: Any | None, embedder_name: str, out_dir: Path = artefacts.ARTEFACTS_DIR) -> artefacts.ModelCard:
    """Fit the English variants (with and without embeddings) and the other-language one, choose
    thresholds on held-out readings and write the artefact. `encode`: texts -> normalised vectors, or
    None for the lexical variant only."""

    data_hash = current_hash() or ""  # of the data as read now, not as it may be when the fit ends
    messages = training_messages()
    texts, labels = [t for t, _, _ in messages], [c for _, c, _ in messages]
    truth = np.array([s.expected == "crisis" for _, _, s in messages])
    by_pattern = np.array([pattern_hit(s.user) is not None for _, _, s in messages])
    bundle: dict[str, Any] = {}
    card_metrics: dict[str, Any] = {}
    thresholds: dict[str, float] = {}
    # Both variants read the same n-grams: one vectoriser, fitted once and stored once.
    vectoriser = plain(ngram_vectoriser().fit(texts))
    variants = [("lexical", None)] + ([("embedded", encode)] if encode is not None else [])
    for variant, encoder in variants:
        x = features(vectoriser, texts, encoder(texts) if encoder else None)
        fitted, (crisis, small, personal, urgent) = _cross_fit(vectoriser, x, labels)
        fitted = with_thresholds(fitted, crisis, truth, by_pattern, SETTINGS["recall_target"])
        threshold = fitted["threshold"]
        fitted["personal_threshold"] = f1_threshold(
            personal, np.array([s.route == "boundary" for _, _, s in messages]), SETTINGS["personal_f1_tie"])
        fitted["urgent_threshold"] = f1_threshold(urgent, np.array([c == URGENT_CLASS for c in labels]))
        bundle[variant] = fitted
        thresholds[f"{variant}.crisis"] = threshold
        thresholds[f"{variant}.personal_advice"] = fitted["personal_threshold"]
        thresholds[f"{variant}.urgent"] = fitted["urgent_threshold"]
        card_metrics[variant] = dev_metrics(crisis, small, threshold, by_pattern, messages, personal,
                                            fitted["personal_threshold"], urgent, fitted["urgent_threshold"])
    split_sizes = {"english": len(messages), "crisis": int(truth.sum()), "folds": SETTINGS["folds"]}
    _train_languages(bundle, card_metrics, thresholds, split_sizes)
    _train_language_id(bundle, card_metrics, thresholds, split_sizes)
    _train_which_language(bundle, card_metrics, split_sizes)
    card = artefacts.ModelCard(
        name=NAME, feature_version=FEATURE_VERSION, data_hash=data_hash,
        data_files=[str(p.relative_to(REPO_ROOT) if p.is_relative_to(REPO_ROOT) else p) for p in training_files()],
        split_sizes=split_sizes, dev_metrics=card_metrics, thresholds=thresholds,
        embedder=embedder_name if encode is not None else "",
        notes=("Logistic regression over word and character n-grams (+ MiniLM embedding in the "
               "'embedded' variant; the 'languages' variant reads messages in other languages); "
               "classes are crisis categories and route:category of the rest. "
               "Dev metrics are cross-validated (each message read by the folds' model that did not see it) "
               "and count the high-precision patterns too, as the screen runs them. "
               f"Settings: {SETTINGS}."))
    artefacts.save(NAME, packed(bundle), card, out_dir, compress=artefacts.FAST_TO_LOAD)
    return card
