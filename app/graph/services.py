"""The heavy objects the graph's nodes use, built once per process and injected (never at import
time): the source identifier, the tier-0 resources (embedder, phrase vectors, learned checks),
the chat model, the filter and the crisis screener."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from app.core.config import Settings
from app.core.medicines import Vocabulary, load_vocabulary
from app.core.models import RoleClient, helper_model, model_for
from app.core.profile import Profile, load_profile
from app.core.records import CafMode, Identification, SourceText
from app.generation.safety_facts import SourcedFacts
from app.kb.loader import KnowledgeBase
from app.retrieval.cards import CardMatcher
from judges.filter import CriticalAnalysisFilter
from judges.local.resources import Resources


class Identifier(Protocol):
    """What the graph needs from retrieval (the real `SourceIdentifier`, or a test's fake)."""

    knowledge_base: KnowledgeBase

    def identify(self, question: str, context: str = "", own_topic: bool | None = None, referred: bool = False,
                 last_sources: Collection[str] = ()) -> Identification: ...

    def keywords_said(self, text: str, source_id: str) -> list[str]: ...

    def names_own_topic(self, question: str) -> bool: ...

    def correct_spelling(self, text: str) -> str: ...

    def correct_english(self, text: str) -> str: ...

    def score(self, texts: list[str]) -> list[list[tuple[str, float]]]: ...

    def follow_index(self) -> None: ...


@dataclass
class Services:
    settings: Settings
    identifier: Identifier
    resources: Resources
    caf: CriticalAnalysisFilter
    chat: RoleClient | None = None
    crisis_screener: RoleClient | None = None  # the LLM's second look at uncertain user messages
    cards: CardMatcher | None = None  # vetted answer cards; built from the knowledge base if None
    condenser: RoleClient | None = None  # rewrites a follow-up as a question that stands alone

    _known_texts: frozenset[str] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.cards is None:
            self.cards = CardMatcher(getattr(self.identifier.knowledge_base, "cards", []), self.embed,
                                     self.profile.condition_words)

    @classmethod
    def from_settings(cls, settings: Settings, *, show_progress: bool = False, **overrides: Any) -> Services:
        """Everything from configuration; pass `embedder=`, `identifier=`, `chat=`, `caf=` or
        `crisis_screener=` or `condenser=` to replace a part (tests hand in fakes and scripted models this way)."""
        from app.core.embeddings import Embedder

        given = overrides.pop("embedder", None)
        embedder = given or Embedder()
        if given is None:
            _ready_to_encode(embedder)
        identifier, resources = _identifier_and_resources(settings, embedder, overrides.pop("identifier", None),
                                                          show_progress)
        chat = overrides.pop("chat") if "chat" in overrides else model_for("chat", settings)
        if "crisis_screener" not in overrides and 1 in settings.caf.tiers:
            overrides["crisis_screener"] = model_for("screener", settings)
        if "condenser" not in overrides and settings.retrieval.condense:
            # The configured models, never a test's stand-in chat model.
            overrides["condenser"] = helper_model(settings)
        caf = overrides.pop("caf", None) or CriticalAnalysisFilter.from_settings(settings, resources)
        return cls(settings=settings, identifier=identifier, resources=resources, caf=caf, chat=chat,
                   **overrides)

    @property
    def profile(self) -> Profile:
        """What the deployment says about itself (profile.yaml beside the knowledge base served)."""
        return load_profile(self.identifier.knowledge_base.path)

    @cached_property
    def sourced_facts(self) -> SourcedFacts:
        """Safety facts from the sources, for the kinds of request no answer card answers."""
        return SourcedFacts([(s.id, SourceText.of(s).text) for s in self.identifier.knowledge_base], self.embed)

    @property
    def medicines(self) -> Vocabulary:
        """The medicines the deployment knows, with their warning signs (medicines.yaml beside the
        knowledge base served, over the product's)."""
        return load_vocabulary(self.identifier.knowledge_base.path)

    @property
    def default_caf_mode(self) -> CafMode:
        return "on" if self.settings.caf.enabled else "off"

    def embed(self, texts: list[str]) -> np.ndarray:
        """Sentence vectors for the generator and the card matcher, cached: the knowledge base's own
        texts in the cache file every process shares, anything else (a question) in memory only."""
        embedder = self.resources.embedder
        known = self._source_texts()
        ours = [i for i, t in enumerate(texts) if t in known]
        if not ours:
            return embedder.encode(texts, cache=True)
        rows = np.empty((len(texts), embedder.dimensions), dtype=np.float32)
        rows[ours] = embedder.encode_known([texts[i] for i in ours])
        if others := [i for i in range(len(texts)) if i not in set(ours)]:
            rows[others] = embedder.encode([texts[i] for i in others], cache=True)
        return rows

    def _source_texts(self) -> frozenset[str]:
        """The knowledge base's own texts that get embedded: what the generator embeds for each
        source, and the answer cards' phrasings."""
        if self._known_texts is None:
            from app.generation.likeness import embedded_texts

            kb = self.identifier.knowledge_base
            self._known_texts = frozenset([*(text for source in kb for text in embedded_texts(SourceText.of(source))),
                                           *(q for card in getattr(kb, "cards", []) for q in card.questions)])
        return self._known_texts

    def warm_up(self) -> None:
        """Embed every source sentence and ready the local checks, so that the first answers of a
        long-running session (the REPL, the app) are as fast as the later ones."""
        self.resources.encode(sorted(self._source_texts()), known=True)
        self.resources.warm_up([SourceText.of(s) for s in self.identifier.knowledge_base])

    def source_text(self, source_id: str) -> SourceText | None:
        source = self.identifier.knowledge_base.get(source_id)
        return SourceText.of(source) if source else None

    def topic_titles(self) -> list[str]:
        return [source.title for source in self.identifier.knowledge_base]


def _identifier_and_resources(settings: Settings, embedder: Any, identifier: Identifier | None,
                              show_progress: bool) -> tuple[Identifier, Resources]:
    """The source identifier and the local checks' resources, loaded side by side: the index's
    store and the checks' artefacts each spend much of their loading outside the interpreter's lock."""
    if identifier:
        return identifier, Resources.from_settings(settings, embedder, identifier.correct_english)
    # Imported here, not in the thread: two threads importing one package graph can deadlock.
    import bm25s  # noqa: F401
    import chromadb  # noqa: F401

    from app.retrieval import open_identifier

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="open-identifier") as pool:
        opening = pool.submit(open_identifier, settings, embedder, show_progress=show_progress)
        try:
            # The speller is the identifier's; nothing reads a message before both are loaded.
            resources = Resources.from_settings(settings, embedder, lambda text: opening.result().correct_english(text))
        except BaseException:
            opening.result()  # the identifier's own failure, if any, first: it was opened first
            raise
        identifier = opening.result()
    resources.correct_english = identifier.correct_english
    return identifier, resources


def _ready_to_encode(embedder: Any) -> None:
    """Start the encoder's runtime now, in the background: the first message's reading would
    otherwise wait for it (a few hundred milliseconds)."""
    def encode_once() -> None:
        with contextlib.suppress(Exception):  # a broken model is the turn's to report, as before
            embedder.encode(["ready"], cache=False)

    threading.Thread(target=encode_once, name="ready-to-encode").start()
