"""What the input screen's classifiers read and how they score it: word and character n-grams
(with the sentence embedding when there is one), weighted and scored here rather than by
scikit-learn's own calls, whose per-call checks cost more than the arithmetic on one message; and
the class probabilities summed by route. The request-kind model reads the same features."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.sparse import csr_matrix, hstack
from scipy.special import expit, softmax
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion

# Someone unwell now ("he hasn't slept for days and thinks he's being watched, what do we do?"):
# one of the own-case classes, which the answer leads with how to get help today.
URGENT_CLASS = "boundary:urgent"


def ngram_vectoriser(chars: tuple[int, int] = (2, 5)) -> FeatureUnion:
    return FeatureUnion([
        ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=chars, sublinear_tf=True, min_df=2)),
        ("words", TfidfVectorizer(analyzer="word", ngram_range=(1, 2), sublinear_tf=True,
                                  token_pattern=r"(?u)\b\w[\w']*\b")),
    ])


def features(vectoriser: FeatureUnion, texts: list[str], embedded: np.ndarray | None) -> Any:
    # Each part in turn, as FeatureUnion.transform would stack them, without its joblib dispatch
    # (most of the cost of reading one message).
    x = hstack([tfidf(part, texts) for _, part in vectoriser.transformer_list]).tocsr()
    return hstack([x, csr_matrix(embedded)]).tocsr() if embedded is not None else x


def tfidf(vectoriser: TfidfVectorizer, texts: list[str]) -> csr_matrix:
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


def _as_weights(x: Any) -> Any:
    """Features in the weights' precision: a float64 matrix times the float32 weights makes a
    float64 copy of the weights (tens of thousands of rows) at every message."""
    return x.astype(np.float32)


def grouped(classifier: LogisticRegression, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Class probabilities summed by route: (crisis, small talk, personal advice, urgent situation)."""
    classes = [str(c) for c in classifier.classes_]
    crisis = p[:, [i for i, c in enumerate(classes) if c.startswith("crisis:")]].sum(axis=1)
    small = p[:, [i for i, c in enumerate(classes) if c.startswith("small_talk:")]].sum(axis=1)
    personal = p[:, [i for i, c in enumerate(classes) if c.startswith("boundary:")]].sum(axis=1)
    urgent = p[:, classes.index(URGENT_CLASS)] if URGENT_CLASS in classes else np.zeros(p.shape[0])
    return crisis, small, personal, urgent


def likeliest_kind(classifier: LogisticRegression, p: np.ndarray, route: str) -> list[str]:
    """Per text (`p`: its class probabilities), the category of its likeliest class on `route`
    ("small_talk" -> "farewell", "thanks", …; "boundary" -> "missed_dose", …; "crisis" ->
    "medical_emergency", …), whatever the route it is read on."""
    columns = [i for i, c in enumerate(classifier.classes_) if str(c).startswith(f"{route}:")]
    if not columns:
        return [""] * p.shape[0]
    return [str(classifier.classes_[columns[int(i)]]).split(":", 1)[1] for i in np.argmax(p[:, columns], axis=1)]
