"""Which source a message is about, learned from how people ask: the knowledge base's example
messages (`knowledge_base/examples/`, see app.kb.examples).

The sources are written in the sources' words; people write in theirs ("the radio presenters are
sending her messages", "since i got ill i cant concentrate, am i getting thick"), and MiniLM finds
those far from the text that answers them. Near other messages written the way people write, they
are not. A multinomial logistic regression over the examples' MiniLM vectors, with "none" (the
messages no source answers) as a class of its own, gives each message a probability per source.
Retrieval adds what it says to each source's own evidence (`SourceIdentifier._learned_evidence`).

It is fitted from the examples, deterministically, when the index is opened, and cached under the
fingerprint of the examples and the model (`Settings.cache_dir`), so a change to any example refits
it and nothing else does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import joblib
import numpy as np
from tqdm import tqdm

from app.core.learning.logistic import Linear, predict_proba
from app.kb.examples import ExampleSet

Embed = Callable[[list[str]], np.ndarray]

# The regression's inverse regularisation: the best accuracy of a 5-fold cross-validation on the
# examples alone, over C from 1 to 32.
_C = 4.0
_BATCH = 256
_KEEP = 8  # fits kept in the cache
# The default deployment's fit ships here, so a first start does not embed its thousands of
# example messages; any other set of examples is fitted once and kept in the cache dir.
SHIPPED_DIR = Path(__file__).with_name("fitted")
# `{condition}` and `{also}` are the profile's first two names for the condition ("schizophrenia",
# "psychosis"); without any, only the framings that name none.
_FRAMINGS = (
    "My brother has {condition}.", "my mum was diagnosed with {condition} a few years ago,",
    "I'm 19 and I was diagnosed last year.", "My son has {also}.", "my wife has {condition} and",
    "Hi, my dad has {condition}.", "i have {condition}.", "Our daughter was just diagnosed.",
    "My best friend has {condition},", "I've had {condition} for 20 years.",
    "my partner was diagnosed in hospital last month.", "My sister has been unwell for a while.",
)


def framings(condition_words: Sequence[str]) -> list[str]:
    """The scene-setting openings, naming the condition as the deployment's profile does."""
    if not condition_words:
        return [f for f in _FRAMINGS if "{" not in f]
    also = condition_words[1] if len(condition_words) > 1 else condition_words[0]
    return [f.format(condition=condition_words[0], also=also) for f in _FRAMINGS]


def training_texts(sets: Sequence[ExampleSet], condition_words: Sequence[str]) -> tuple[list[str], list[str]]:
    """The messages and their sources, each message once more after a sentence that sets the scene
    and says nothing of what is asked: people often start so, and without this the classifier
    learnt the scene of the sources whose examples most often had one ("my brother has
    schizophrenia, does that mean I'll get it too?" read as "what is schizophrenia?")."""
    texts = [m for s in sets for m in s.messages]
    labels = [s.source for s in sets for _ in s.messages]
    scenes = framings(condition_words)
    return [*texts, *(f"{scenes[n % len(scenes)]} {m}" for n, m in enumerate(texts))], labels + labels


def fit_key(texts: list[str], labels: list[str], model_name: str) -> str:
    """What a fit is of: the same key, the same classifier."""
    return hashlib.sha256(json.dumps([model_name, _C, texts, labels]).encode()).hexdigest()[:16]


class ExampleClassifier:
    """The fitted regression as plain arrays: reading a message needs numpy, not scikit-learn."""

    def __init__(self, classes: list[str], coef: np.ndarray, intercept: np.ndarray):
        self.classes = classes
        self._model = Linear(coef, intercept, np.asarray(classes))

    @classmethod
    def read(cls, path: Path) -> ExampleClassifier:
        """A stored fit: (classes, coef, intercept), or, as written before, (classes, the model)."""
        classes, *fitted = joblib.load(path)
        return cls(classes, *((fitted[0].coef_, fitted[0].intercept_) if len(fitted) == 1 else fitted))

    @classmethod
    def fit(cls, sets: Sequence[ExampleSet], embed: Embed, cache_dir: Path | None = None,
            model_name: str = "", show_progress: bool = False,
            condition_words: Sequence[str] = ()) -> ExampleClassifier | None:
        """Fitted on `sets` (None when they name fewer than two classes: nothing to learn), from
        `cache_dir` when the same examples were fitted before."""
        texts, labels = training_texts(sets, condition_words)
        if len(set(labels)) < 2:
            return None
        key = fit_key(texts, labels, model_name)
        if (shipped := SHIPPED_DIR / f"examples-{key}.joblib").is_file():
            return cls.read(shipped)  # the default deployment's fit, made by `make train`
        cached = cache_dir / f"examples-{key}.joblib" if cache_dir else None
        if cached is not None and cached.is_file():
            try:
                return cls.read(cached)
            except Exception:  # a damaged cache is derived data: fit again
                cached.unlink(missing_ok=True)
        from sklearn.linear_model import LogisticRegression

        with tqdm(total=len(texts), desc="Learning from example messages", unit="message",
                  disable=not show_progress) as bar:
            vectors = []
            for start in range(0, len(texts), _BATCH):
                vectors.append(embed(texts[start: start + _BATCH]))
                bar.update(len(vectors[-1]))
        model = LogisticRegression(C=_C, max_iter=2000).fit(np.concatenate(vectors), labels)
        fitted = cls([str(c) for c in model.classes_], model.coef_, model.intercept_)
        if cached is not None:
            _store(cached, fitted.stored)
        return fitted

    @property
    def stored(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        return self.classes, self._model.coef_, self._model.intercept_

    def probabilities(self, vectors: np.ndarray) -> list[dict[str, float]]:
        """Per (L2-normalised MiniLM) vector, each class's probability; app.kb.examples.NOT_COVERED ("none") is one."""
        if len(vectors) == 0:
            return []
        rows = predict_proba(self._model, vectors)
        return [dict(zip(self.classes, map(float, row), strict=True)) for row in rows]


def _store(path: Path, fitted: tuple) -> None:
    """Keep the fit, and the few most recent others (several knowledge bases may share the cache);
    a cache that cannot be written only costs the next start a refit."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        joblib.dump(fitted, path)
        kept = sorted(path.parent.glob("examples-*.joblib"), key=lambda f: f.stat().st_mtime, reverse=True)
        for old in kept[_KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass


def ship_default_fit() -> Path:
    """Fit the default deployment's examples and write the fit where it ships (`make train`)."""
    from app.core.config import DEFAULT_KNOWLEDGE_BASE
    from app.core.embeddings import Embedder
    from app.core.profile import load_profile
    from app.kb.loader import load_knowledge_base

    kb, embedder = load_knowledge_base(DEFAULT_KNOWLEDGE_BASE), Embedder()
    for old in SHIPPED_DIR.glob("examples-*.joblib"):
        old.unlink()
    SHIPPED_DIR.mkdir(exist_ok=True)
    fitted = ExampleClassifier.fit(kb.examples, lambda texts: embedder.encode(texts, cache=False), SHIPPED_DIR,
                                   model_name=embedder.name,
                                   condition_words=load_profile(DEFAULT_KNOWLEDGE_BASE).condition_words)
    assert fitted is not None
    return next(SHIPPED_DIR.glob("examples-*.joblib"))
