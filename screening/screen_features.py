"""What the input screen's classifiers read and how they score it: word and character n-grams
(with the sentence embedding when there is one), weighted and scored here rather than by
scikit-learn's own calls, whose per-call checks cost more than the arithmetic on one message; and
the class probabilities summed by route. The request-kind model reads the same features.

The fitted vectorisers and classifiers are kept as plain data (`NgramCounter`, `NgramFeatures`
and `app.core.learning.logistic.Linear`), so reading a message needs numpy and scipy's sparse
matrices but not scikit-learn, whose import took a second of every start; scikit-learn fits them
(screen_training.py) and `plain` turns what it fitted into these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix, hstack

from app.core.learning.logistic import Linear

# Someone unwell now ("he hasn't slept for days and thinks he's being watched, what do we do?"):
# one of the own-case classes, which the answer leads with how to get help today.
URGENT_CLASS = "boundary:urgent"


_WHITE_SPACES = re.compile(r"\s\s+")


@dataclass
class NgramCounter:
    """A fitted `TfidfVectorizer` as plain data: its n-grams counted as scikit-learn counts them
    (lower case; "char_wb": character n-grams inside words padded with a space; "word": token
    n-grams), and its weighting. tests/test_artefacts.py holds it equal to scikit-learn's."""

    analyzer: str
    ngram_range: tuple[int, int]
    token_pattern: str
    vocabulary: dict[str, int]
    idf: np.ndarray
    sublinear_tf: bool
    norm: str | None

    def ngrams(self, text: str) -> list[str]:
        low, high = self.ngram_range
        text = text.lower()
        if self.analyzer == "char_wb":
            grams = []
            for word in _WHITE_SPACES.sub(" ", text).split():
                word = f" {word} "
                for n in range(low, high + 1):
                    grams += [word[i:i + n] for i in range(max(len(word) - n, 0) + 1)]
                    if len(word) <= n:  # a short word is counted once, at its full length
                        break
            return grams
        if self.analyzer != "word":
            raise ValueError(f"n-gram analyzer {self.analyzer!r}: only char_wb and word are read here")
        tokens = re.findall(self.token_pattern, text)
        return [" ".join(tokens[i:i + n]) for n in range(low, high + 1) for i in range(len(tokens) - n + 1)]

    def counts(self, texts: list[str]) -> csr_matrix:
        data: list[int] = []
        indices: list[int] = []
        indptr = [0]
        for text in texts:
            found: dict[int, int] = {}
            for gram in self.ngrams(text):
                if (column := self.vocabulary.get(gram)) is not None:
                    found[column] = found.get(column, 0) + 1
            for column in sorted(found):
                indices.append(column)
                data.append(found[column])
            indptr.append(len(indices))
        return csr_matrix((np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int32),
                           np.asarray(indptr, dtype=np.int32)), shape=(len(texts), len(self.vocabulary)))


@dataclass
class NgramFeatures:
    """Several `NgramCounter`s side by side (a fitted `FeatureUnion` of them)."""

    parts: tuple[NgramCounter, ...]


def plain(fitted: Any) -> Any:
    """What scikit-learn fitted, as the plain data above (dicts, lists and tuples walked through);
    anything else as it is."""
    if isinstance(fitted, dict):
        return {key: plain(value) for key, value in fitted.items()}
    if isinstance(fitted, list | tuple):
        return type(fitted)(plain(value) for value in fitted)
    if not type(fitted).__module__.startswith("sklearn."):
        return fitted
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import FeatureUnion

    if isinstance(fitted, FeatureUnion):
        return NgramFeatures(tuple(plain(part) for _, part in fitted.transformer_list))
    if isinstance(fitted, LogisticRegression):
        return Linear(fitted.coef_, fitted.intercept_, fitted.classes_)
    if isinstance(fitted, TfidfVectorizer):
        if not (fitted.lowercase and fitted.strip_accents is None and fitted.use_idf and fitted.stop_words is None
                and fitted.preprocessor is None and fitted.tokenizer is None and not fitted.binary):
            raise ValueError(f"{fitted!r}: a vectoriser set up otherwise than NgramCounter reads")
        return NgramCounter(fitted.analyzer, tuple(fitted.ngram_range), fitted.token_pattern,
                            dict(fitted.vocabulary_), fitted.idf_, fitted.sublinear_tf, fitted.norm)
    raise TypeError(f"no plain form for {type(fitted).__name__}")


def ngram_vectoriser(chars: tuple[int, int] = (2, 5)) -> Any:
    """The screen's n-grams, to fit (a scikit-learn `FeatureUnion`; `plain` keeps it)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import FeatureUnion

    return FeatureUnion([
        ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=chars, sublinear_tf=True, min_df=2)),
        ("words", TfidfVectorizer(analyzer="word", ngram_range=(1, 2), sublinear_tf=True,
                                  token_pattern=r"(?u)\b\w[\w']*\b")),
    ])


def features(vectoriser: NgramFeatures, texts: list[str], embedded: np.ndarray | None) -> Any:
    x = hstack([tfidf(part, texts) for part in vectoriser.parts]).tocsr()
    return hstack([x, csr_matrix(embedded)]).tocsr() if embedded is not None else x


def tfidf(vectoriser: NgramCounter, texts: list[str]) -> csr_matrix:
    """The texts' weighted n-grams, as `TfidfVectorizer.transform` gives them."""
    x = vectoriser.counts(texts)
    if vectoriser.sublinear_tf:
        np.log(x.data, out=x.data)
        x.data += 1
    x.data *= vectoriser.idf[x.indices]
    if vectoriser.norm == "l2":
        lengths = np.diff(x.indptr)
        norms = np.sqrt(np.bincount(np.repeat(np.arange(x.shape[0]), lengths), weights=x.data ** 2,
                                    minlength=x.shape[0]))
        x.data /= np.repeat(np.where(norms > 0, norms, 1.0), lengths)
    elif vectoriser.norm is not None:
        raise ValueError(f"tf-idf norm {vectoriser.norm!r}: only l2 is read here")
    return x


def grouped(classifier: Linear, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Class probabilities summed by route: (crisis, small talk, personal advice, urgent situation)."""
    classes = [str(c) for c in classifier.classes_]
    crisis = p[:, [i for i, c in enumerate(classes) if c.startswith("crisis:")]].sum(axis=1)
    small = p[:, [i for i, c in enumerate(classes) if c.startswith("small_talk:")]].sum(axis=1)
    personal = p[:, [i for i, c in enumerate(classes) if c.startswith("boundary:")]].sum(axis=1)
    urgent = p[:, classes.index(URGENT_CLASS)] if URGENT_CLASS in classes else np.zeros(p.shape[0])
    return crisis, small, personal, urgent


def likeliest_kind(classifier: Linear, p: np.ndarray, route: str) -> list[str]:
    """Per text (`p`: its class probabilities), the category of its likeliest class on `route`
    ("small_talk" -> "farewell", "thanks", …; "boundary" -> "missed_dose", …; "crisis" ->
    "medical_emergency", …), whatever the route it is read on."""
    columns = [i for i, c in enumerate(classifier.classes_) if str(c).startswith(f"{route}:")]
    if not columns:
        return [""] * p.shape[0]
    return [str(classifier.classes_[columns[int(i)]]).split(":", 1)[1] for i in np.argmax(p[:, columns], axis=1)]
