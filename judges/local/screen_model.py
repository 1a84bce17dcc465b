"""The learned layer of the input screen: one classifier that reads an English user message and
says how likely it is a crisis, small talk, a request for advice on the writer's own case, or an
urgent situation (someone unwell now who needs help today, one of the own-case classes).

Trained by `cafbot judges train` on the train split of scenarios/screen (deliberately diverse:
crisis of every kind, small talk, idioms, everyday complaints, health and carer questions) plus
the user-only messages of scenarios/judges/train. Its classes are fine-grained (each crisis
category; each route and category of the rest), so the model learns what an everyday complaint or
an idiom looks like instead of "not a health question"; the crisis probability is the sum of the
crisis classes. Features: word and character n-grams (robust to typos and slang) and, when the
MiniLM embedder it was trained with is available, the sentence embedding. Messages in other
languages have their own variant: n-grams only (MiniLM reads English only), over the folded text
the language lexicon reads, fitted on the other-language messages, so a crisis said in words the
lexicon does not list is still caught. Which reader a message gets is decided by a third model
trained on the same messages: is it English? (A general-purpose language identifier reads English
slang, "i wanna die so bad rn", as another language; a word list reads short messages in other
languages as English.)

Thresholds are chosen on cross-validated readings of the train split (never on the holdout): each
message is read by a model fitted on the other folds, and the crisis threshold is the highest that
keeps the screen's recall on those readings (patterns and model together, as a user turn runs
them) at `recall_target`; the shipped model averages the folds' models. The fitted model is an
artefact (judges/local/artefacts.py).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.sparse import csr_matrix, hstack
from scipy.special import expit, softmax
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.pipeline import FeatureUnion

from app.core.config import REPO_ROOT
from app.core.spelling import is_english_word
from app.core.text import words
from judges.local import artefacts, crisis_languages
from judges.local.crisis_text import IDIOM_MARK, normalise, pattern_hit

if TYPE_CHECKING:
    from judges.local.encoder import Encoder
    from judges.scenarios import Scenario

NAME = "input_screen"
# 3: a personal-advice probability (the boundary classes) and its threshold;
# 4: a variant for other languages; coefficients stored at half precision; 5: a language identifier;
# 6: an urgent-situation probability (the class below) and its threshold; 7: which other language
FEATURE_VERSION = 7
# Someone unwell now ("he hasn't slept for days and thinks he's being watched, what do we do?"):
# one of the own-case classes, which the answer leads with how to get help today.
URGENT_CLASS = "boundary:urgent"
TRAIN_DIRS = (REPO_ROOT / "scenarios" / "screen" / "train", REPO_ROOT / "scenarios" / "judges" / "train")
# Recall targets: in English a missed crisis gets an ordinary answer, so recall comes first; in
# other languages a miss still gets the "English only" notice, which carries the crisis contacts,
# as a false alarm's crisis reply does, so the two errors cost nearly the same there.
# Personal advice: a general question put on the boundary route loses its answer, so where F1 is
# flat (the thresholds within `personal_f1_tie` of the best) the highest threshold wins.
SETTINGS = {"c": 10.0, "folds": 5, "dev_share": 0.25, "recall_target": 0.96, "recall_target_other_languages": 0.93,
            "english_kept": 0.999, "personal_f1_tie": 0.005, "seed": 0}
_LETTER = re.compile(r"[^\W\d_]")
_PUNCTUATION = ".,;:!?\"'()"


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


def label(scenario: Scenario) -> str:
    if scenario.expected == "crisis":
        return f"crisis:{scenario.category or 'judge_scenario'}"
    return f"{scenario.route or 'question'}:{scenario.category or 'judge_scenario'}"


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


def training_messages(*, english: bool = True) -> list[tuple[str, str, Scenario]]:
    """(normalised text, class, scenario) for every user message the screen learns from, in English
    or in the other languages: screen scenarios, and judge scenarios that judge the user message
    alone. A message seen twice keeps its first label; the crisis one when they disagree (recall
    first)."""
    from judges.scenarios import load_scenarios

    found: dict[str, tuple[str, str, Scenario]] = {}
    for scenario in load_scenarios(training_files()):
        if (scenario.language == "en") != english or (scenario.response is not None and scenario.route is None):
            continue
        text = normalise(scenario.user, idiom_mark=IDIOM_MARK) if english else crisis_languages.fold(scenario.user)
        if text and (text not in found or scenario.expected == "crisis"):
            found[text] = (text, label(scenario), scenario)
    return list(found.values())


def ngram_vectoriser(chars: tuple[int, int] = (2, 5)) -> FeatureUnion:
    return FeatureUnion([
        ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=chars, sublinear_tf=True, min_df=2)),
        ("words", TfidfVectorizer(analyzer="word", ngram_range=(1, 2), sublinear_tf=True,
                                  token_pattern=r"(?u)\b\w[\w']*\b")),
    ])


def features(vectoriser: FeatureUnion, texts: list[str], embedded: np.ndarray | None) -> Any:
    # Each part in turn, as FeatureUnion.transform would stack them, without its joblib dispatch
    # (most of the cost of reading one message).
    x = hstack([_tfidf(part, texts) for _, part in vectoriser.transformer_list]).tocsr()
    return hstack([x, csr_matrix(embedded)]).tocsr() if embedded is not None else x


def _tfidf(vectoriser: TfidfVectorizer, texts: list[str]) -> csr_matrix:
    """`vectoriser.transform(texts)`, its weighting done here: scikit-learn's checks of its own
    intermediate matrix cost three times the counting itself on one message (0.45 of 0.6 ms).
    tests/test_artefacts.py holds it equal to scikit-learn's."""
    x = CountVectorizer.transform(vectoriser, texts).astype(np.float64)
    if vectoriser.sublinear_tf:
        np.log(x.data, out=x.data)
        x.data += 1
    if vectoriser.use_idf:
        x.data *= vectoriser.idf_[x.indices]
    if vectoriser.norm == "l2":
        lengths = np.diff(x.indptr)
        norms = np.sqrt(np.bincount(np.repeat(np.arange(x.shape[0]), lengths), weights=x.data ** 2,
                                    minlength=x.shape[0]))
        x.data /= np.repeat(np.where(norms > 0, norms, 1.0), lengths)
    elif vectoriser.norm is not None:
        raise ValueError(f"tf-idf norm {vectoriser.norm!r}: only l2 is read here")
    return x


def predict_proba(classifier: LogisticRegression, x: Any) -> np.ndarray:
    """`classifier.predict_proba(x)` without scikit-learn's per-call input checks (0.2 ms a
    message, twenty times the arithmetic): a logistic for two classes, a softmax for more, as
    scikit-learn computes them. tests/test_artefacts.py holds it equal to scikit-learn's."""
    scores = np.asarray(_as_weights(x) @ classifier.coef_.T) + classifier.intercept_
    if scores.shape[1] == 1:
        positive = expit(scores[:, 0])
        return np.column_stack([1 - positive, positive])
    return softmax(scores, axis=1)


def _cross_fit(vectoriser: FeatureUnion, x: Any, labels: list[str]
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


def fit_classifier(x: Any, labels: list[str], c: float = SETTINGS["c"]) -> LogisticRegression:
    classifier = LogisticRegression(C=c, class_weight="balanced", max_iter=5000)
    classifier.fit(x, labels)
    # Half precision is plenty for these weights and makes the shipped artefact a third of the
    # size; rounded before anything is scored, so the card describes weights as they ship.
    classifier.coef_ = classifier.coef_.astype(np.float16).astype(np.float32)
    return classifier


def _probabilities(variant: dict[str, Any], texts: list[str], embedded: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(crisis, small talk, personal advice, urgent situation) probability per text."""
    return _class_probabilities(variant["classifier"], features(variant["vectoriser"], texts, embedded))


def _likeliest_kind(classifier: LogisticRegression, p: np.ndarray, route: str) -> list[str]:
    """Per text (`p`: its class probabilities), the category of its likeliest class on `route`
    ("small_talk" -> "farewell", "thanks", …; "boundary" -> "missed_dose", …; "crisis" ->
    "medical_emergency", …), whatever the route it is read on."""
    columns = [i for i, c in enumerate(classifier.classes_) if str(c).startswith(f"{route}:")]
    if not columns:
        return [""] * p.shape[0]
    return [str(classifier.classes_[columns[int(i)]]).split(":", 1)[1] for i in np.argmax(p[:, columns], axis=1)]


def _class_probabilities(classifier: LogisticRegression, x: Any
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return _grouped(classifier, predict_proba(classifier, x))


def _grouped(classifier: LogisticRegression, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Class probabilities summed by route: (crisis, small talk, personal advice, urgent situation)."""
    classes = [str(c) for c in classifier.classes_]
    crisis = p[:, [i for i, c in enumerate(classes) if c.startswith("crisis:")]].sum(axis=1)
    small = p[:, [i for i, c in enumerate(classes) if c.startswith("small_talk:")]].sum(axis=1)
    personal = p[:, [i for i, c in enumerate(classes) if c.startswith("boundary:")]].sum(axis=1)
    urgent = p[:, classes.index(URGENT_CLASS)] if URGENT_CLASS in classes else np.zeros(p.shape[0])
    return crisis, small, personal, urgent


def _threshold(crisis: np.ndarray, is_crisis: np.ndarray, by_pattern: np.ndarray, target: float) -> float:
    """The highest threshold at which patterns and model together keep the dev recall target."""
    for t in np.round(np.arange(0.95, 0.04, -0.01), 2):
        caught = by_pattern | (crisis >= t)
        if caught[is_crisis].mean() >= target:
            return float(t)
    return 0.05


def _f1_threshold(probability: np.ndarray, truth: np.ndarray, tie: float = 0.0) -> float:
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


def _dev_metrics(crisis: np.ndarray, small: np.ndarray, threshold: float, by_pattern: np.ndarray,
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


def _with_thresholds(fitted: dict[str, Any], crisis: np.ndarray, truth: np.ndarray,
                     caught: np.ndarray, target: float) -> dict[str, Any]:
    """The crisis threshold and the lines either side of it, chosen on held-out readings."""
    threshold = _threshold(crisis, truth, caught, target)
    fitted["threshold"] = threshold
    fitted["confident"] = round(threshold + (1 - threshold) / 2, 3)
    fitted["second_look"] = round(threshold / 2, 3)
    return fitted


def _train_languages(bundle: dict[str, Any], card_metrics: dict[str, Any], thresholds: dict[str, float],
                     split_sizes: dict[str, int]) -> None:
    """The variant for messages in other languages: n-grams of the folded text, thresholds counting
    the language lexicon's hits, as the screen runs them. Its classes are the routes alone (a few
    dozen messages per language cannot teach each crisis kind), and its character n-grams are
    shorter: on a dev split of nineteen languages both gave fewer false alarms at the same recall."""
    messages = [(text, f"{kind.split(':')[0]}:all", scenario)
                for text, kind, scenario in training_messages(english=False)]
    texts = [t for t, _, _ in messages]
    vectoriser = ngram_vectoriser(chars=(1, 3)).fit(texts)
    fitted, (crisis, small, personal, urgent) = _cross_fit(
        vectoriser, features(vectoriser, texts, None), [c for _, c, _ in messages])
    truth = np.array([s.expected == "crisis" for _, _, s in messages])
    by_lexicon = np.array([crisis_languages.find(s.user) is not None for _, _, s in messages])
    fitted = _with_thresholds(fitted, crisis, truth, by_lexicon, SETTINGS["recall_target_other_languages"])
    # Other languages get the "English only" notice, not advice.
    fitted["personal_threshold"] = fitted["urgent_threshold"] = 1.0
    bundle["languages"] = fitted
    thresholds["languages.crisis"] = fitted["threshold"]
    card_metrics["languages"] = _dev_metrics(crisis, small, fitted["threshold"], by_lexicon, messages,
                                             personal, 1.0, urgent, 1.0)
    card_metrics["languages"]["lexicon_alone_recall"] = round(float(by_lexicon[truth].mean()), 3)
    split_sizes.update(languages=len(messages), languages_crisis=int(truth.sum()))


def language_rows() -> list[tuple[str, str, Scenario]]:
    """(message as written, "en" or "other", scenario) for the language identifier: each message
    whose script and length do not already decide."""
    from judges.scenarios import load_scenarios

    found: dict[str, tuple[str, str, Scenario]] = {}
    for scenario in load_scenarios(training_files()):
        if _too_short_to_judge(scenario.user) is None:
            found.setdefault(scenario.user, (scenario.user, "en" if scenario.language == "en" else "other", scenario))
    return list(found.values())


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
    fitted = {"vectoriser": vectoriser,
              "classifier": fit_classifier(vectoriser.fit_transform(texts), [c for _, c, _ in train_rows])}
    english = _english_probability(fitted, [t for t, _, _ in dev_rows])
    truth = np.array([c == "en" for _, c, _ in dev_rows])
    # The same scan as the crisis thresholds, with "English" for "crisis" and nothing else to help.
    threshold = _threshold(english, truth, np.zeros_like(truth), SETTINGS["english_kept"])
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
    fitted = {"vectoriser": vectoriser, "classifier": classifier}
    read = _likeliest_language(fitted, [t for t, _ in dev_rows])
    card_metrics["which_language"] = {"accuracy": round(float(np.mean([r == c for r, (_, c) in zip(read, dev_rows, strict=True)])), 4)}
    # The shipped identifier learns from every message; the dev figure is the split's.
    fitted["classifier"] = fit_classifier(vectoriser.fit_transform([t for t, _ in rows]), [c for _, c in rows])
    bundle["which_language"] = fitted
    split_sizes.update(which_language=len(rows))


def _likeliest_language(fitted: dict[str, Any], messages: list[str]) -> list[str]:
    classifier: LogisticRegression = fitted["classifier"]
    p = predict_proba(classifier, _tfidf(fitted["vectoriser"], messages))
    return [str(classifier.classes_[i]) for i in np.argmax(p, axis=1)]


def _too_short_to_judge(message: str) -> bool | None:
    """English or not when the script or the length decides: mostly non-Latin letters are not
    English; numbers or emoji alone, and fewer than three words ("ok", "clozapine?", "Hej!"), are
    read as English (retrieval or small talk copes, and the identifier cannot tell); else None."""
    letters = _LETTER.findall(message)
    if not letters:
        return True
    if sum(c.isascii() for c in letters) / len(letters) < 0.5:
        return False
    return True if len(words(message)) < 3 else None


def _english_probability(fitted: dict[str, Any], messages: list[str]) -> np.ndarray:
    classifier: LogisticRegression = fitted["classifier"]
    column = [str(c) for c in classifier.classes_].index("en")
    return predict_proba(classifier, _tfidf(fitted["vectoriser"], messages))[:, column]


def _columns_contiguous(classifier: LogisticRegression) -> None:
    """Weights laid out so that scoring reads them in place: scikit-learn multiplies the features
    by `coef_.T`, and scipy copies a transposed row-major matrix (73 classes x 52k features, 8 ms)
    at every message; column-major, `coef_.T` is already the layout it wants (0.3 ms)."""
    classifier.coef_ = np.asfortranarray(classifier.coef_)


def _as_weights(x: Any) -> Any:
    """Features in the weights' precision: a float64 matrix times the float32 weights makes a
    float64 copy of the weights (tens of thousands of rows) at every message."""
    return x.astype(np.float32)


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
    vectoriser = ngram_vectoriser().fit(texts)
    variants = [("lexical", None)] + ([("embedded", encode)] if encode is not None else [])
    for variant, encoder in variants:
        x = features(vectoriser, texts, encoder(texts) if encoder else None)
        fitted, (crisis, small, personal, urgent) = _cross_fit(vectoriser, x, labels)
        fitted = _with_thresholds(fitted, crisis, truth, by_pattern, SETTINGS["recall_target"])
        threshold = fitted["threshold"]
        fitted["personal_threshold"] = _f1_threshold(
            personal, np.array([s.route == "boundary" for _, _, s in messages]), SETTINGS["personal_f1_tie"])
        fitted["urgent_threshold"] = _f1_threshold(urgent, np.array([c == URGENT_CLASS for c in labels]))
        bundle[variant] = fitted
        thresholds[f"{variant}.crisis"] = threshold
        thresholds[f"{variant}.personal_advice"] = fitted["personal_threshold"]
        thresholds[f"{variant}.urgent"] = fitted["urgent_threshold"]
        card_metrics[variant] = _dev_metrics(crisis, small, threshold, by_pattern, messages, personal,
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
    artefacts.save(NAME, bundle, card, out_dir)
    return card


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
    """A loaded bundle with every variant's weights laid out for scoring (`_columns_contiguous`)."""
    for variant in bundle.values():
        if isinstance(variant, dict) and "classifier" in variant:
            _columns_contiguous(variant["classifier"])
    return bundle


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
        if (judged := _too_short_to_judge(message)) is not None:
            return judged
        language_id = self.bundle["language_id"]
        if _english_probability(language_id, [message])[0] >= language_id["threshold"]:
            return True
        # One misspelt word can tip a short English message over ("is it same as skitzofrenia":
        # other languages spell the illness that way): read it again without the words English
        # has never seen. A message in another language still reads as that language.
        written = message.split()
        seen = [w for w in written if is_english_word(w.strip(_PUNCTUATION))]
        if len(seen) < 3 or len(seen) == len(written):
            return False
        return bool(_english_probability(language_id, [" ".join(seen)])[0] >= language_id["threshold"])

    def language_of(self, message: str) -> str:
        """The likeliest of the other languages a message is in ("de", "hi", …), as written."""
        return _likeliest_language(self.bundle["which_language"], [message])[0]

    def read_other_language(self, message: str) -> Reading:
        """A message in another language, as written."""
        variant = self.bundle["languages"]
        return self._reading(variant, features(variant["vectoriser"], [crisis_languages.fold(message)], None))

    @staticmethod
    def _reading(variant: dict[str, Any], x: Any) -> Reading:
        """A variant's reading of one message's features."""
        classifier = variant["classifier"]
        p = predict_proba(classifier, x)
        crisis, small, personal, urgent = _grouped(classifier, p)
        return Reading(crisis=round(float(crisis[0]), 4), small_talk=round(float(small[0]), 4),
                       small_talk_kind=_likeliest_kind(classifier, p, "small_talk")[0],
                       boundary_kind=_likeliest_kind(classifier, p, "boundary")[0],
                       crisis_kind=_likeliest_kind(classifier, p, "crisis")[0],
                       threshold=variant["threshold"], confident=variant["confident"],
                       second_look=variant["second_look"], personal=round(float(personal[0]), 4),
                       personal_threshold=variant["personal_threshold"], urgent=round(float(urgent[0]), 4),
                       urgent_threshold=variant["urgent_threshold"])
