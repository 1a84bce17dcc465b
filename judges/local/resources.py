"""What tier 0 needs at run time, owned in one place and passed to every check: the sentence
embedder, vectors of the fixed phrase lists, and the learned checks (shipped artefacts, loaded
here at start-up: a missing or stale one stops start-up with the command that fixes it).

One `Resources` is built per process (the chatbot builds it from settings) and handed to the
cascade and the input screen; nothing in the local checks keeps state of its own. Embeddings can
be off (`caf.local_embeddings = false`, or no embedder): the checks then use their lexical layers,
which is also what happens if the model fails, so tier 0 never fails because of the model.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import numpy as np

from app.core.embeddings import Embedder
from app.core.learning.artefacts import ARTEFACTS_DIR
from app.core.records import SourceText
from judges.local import grounding, patterns
from judges.local.role_model import RoleModel
from screening import crisis_languages
from screening.context_model import ContextModel
from screening.request_kind import RequestKindModel
from screening.screen_model import ScreenModel

log = logging.getLogger(__name__)
T = TypeVar("T")
REMEMBERED = 4096  # results kept by `remember`, least recently used first out


class Resources:
    def __init__(self, embedder: Embedder | None = None, *, use_embeddings: bool = True,
                 artefacts_dir: Path = ARTEFACTS_DIR, correct_english: Callable[[str], str] | None = None,
                 with_context: bool = True):
        patterns.data()  # validated now: a broken patterns.yaml stops start-up, not a later turn
        self.embedder = embedder
        # Misspelt words read as English (the identifier's English speller), as the learned
        # screen reads a message. None: as written.
        self.correct_english = correct_english
        self._use_embeddings = use_embeddings and embedder is not None
        self._broken = False
        self._prototypes: dict[tuple[str, ...], np.ndarray] = {}
        self._lock = threading.Lock()
        self._remembered: OrderedDict[tuple[str, str], object] = OrderedDict()
        self.screen_model = ScreenModel.load(self, artefacts_dir)
        self.role_model = RoleModel.load(self, artefacts_dir)
        self.request_kind = RequestKindModel.load(self, artefacts_dir)
        # `with_context=False` only to fit the context model, which learns from the others' readings.
        self.context_model = ContextModel.load(self, artefacts_dir) if with_context else None

    @classmethod
    def from_settings(cls, settings, embedder: Embedder | None,
                      correct_english: Callable[[str], str] | None = None) -> Resources:
        return cls(embedder, use_embeddings=settings.local_embeddings, correct_english=correct_english)

    @property
    def embeddings(self) -> bool:
        return self._use_embeddings and not self._broken

    @property
    def embedder_name(self) -> str:
        return getattr(self.embedder, "name", "") if self.embedder is not None else ""

    def encode(self, texts: list[str], *, known: bool = False) -> np.ndarray | None:
        """Normalised vectors (rows), or None when embeddings are off or unavailable. Cached by
        the embedder: source sentences recur from turn to turn. `known`: the product's own texts
        (sources, phrase lists), whose vectors may be kept on disk for the next process."""
        if not self.embeddings or self.embedder is None:
            return None
        try:
            if known:
                return self.embedder.encode_known(list(texts))
            return self.embedder.encode(list(texts), cache=True)
        except Exception as error:  # a broken model must not break tier 0: fall back to lexical
            log.warning("local checks: embeddings unavailable, lexical layers only (%s)", error)
            self._broken = True
            return None

    def prototypes(self, texts: list[str]) -> np.ndarray | None:
        """Vectors of a fixed phrase list, computed once per Resources."""
        key = tuple(texts)
        if (hit := self._prototypes.get(key)) is not None:
            return hit
        vectors = self.encode(list(key), known=True)
        if vectors is not None:
            with self._lock:
                self._prototypes[key] = vectors
        return vectors

    def remember(self, kind: str, text: str, compute: Callable[[], T]) -> T:
        """A pure check's result on a text, computed once: a conversation's earlier user turns are
        screened again with every draft judged, and a drift run's audit screens them once more."""
        key = (kind, text)
        with self._lock:
            if key in self._remembered:
                self._remembered.move_to_end(key)
                return self._remembered[key]  # type: ignore[return-value]
        value = compute()
        with self._lock:
            self._remembered[key] = value
            if len(self._remembered) > REMEMBERED:
                self._remembered.popitem(last=False)
        return value

    def max_similarity(self, texts: list[str], against: list[str]) -> np.ndarray | None:
        """For each text, its highest cosine similarity to any phrase in `against`."""
        if not texts or not against:
            return np.zeros(len(texts), dtype=np.float32)
        proto = self.prototypes(against)
        vectors = self.encode(texts) if proto is not None else None
        if proto is None or vectors is None:
            return None
        return (vectors @ proto.T).max(axis=1)

    def warm_up(self, sources: Iterable[SourceText] = ()) -> float:
        """Embed the prototype phrases and the given sources, and run each learned check once, so
        that the first turn is as fast as the others. Returns the seconds it took."""
        started = time.perf_counter()
        crisis_languages.find("warm-up")  # compiles the lexicon of every language
        if self.embeddings:
            self.prototypes(patterns.section("uncited")["allowed_prototypes"])
            self.encode([u for s in sources for u in grounding.units(s.text)], known=True)
        self.screen_model.read("hello")
        self.request_kind.read("hello")
        self.role_model.predict(["This is a warm-up sentence for the role classifier."])
        return time.perf_counter() - started
