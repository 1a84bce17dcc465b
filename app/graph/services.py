"""The heavy objects the graph's nodes use, built once and injected (never at import time)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.config import Settings
from app.generation.extractive import Embed
from app.models import RoleClient, model_for
from app.retrieval import SourceIdentifier
from judges.schema import SourceText


@dataclass
class Services:
    settings: Settings
    identifier: SourceIdentifier
    embed: Embed
    chat: RoleClient | None = None
    caf: Any = None  # judges.filter.CriticalAnalysisFilter; None: the filter is switched off
    crisis_screener: RoleClient | None = None  # the LLM's second look at uncertain user messages

    @classmethod
    def from_settings(cls, settings: Settings, *, show_progress: bool = False, **overrides: Any) -> Services:
        """Everything from configuration; pass `chat=`, `caf=` or `identifier=` to replace a part
        (tests hand in scripted models this way)."""
        from app.retrieval import Embedder, open_identifier
        from judges.local import configure

        configure(cache_dir=settings.models_dir)  # the learned checks train once per data dir

        identifier = overrides.pop("identifier", None) or open_identifier(settings, show_progress=show_progress)
        chat = overrides.pop("chat") if "chat" in overrides else model_for("chat", settings)
        if "crisis_screener" not in overrides and settings.caf.tiers and 1 in settings.caf.tiers:
            overrides["crisis_screener"] = model_for("screener", settings)
        if "caf" in overrides:
            caf = overrides.pop("caf")
        else:
            from judges.filter import CriticalAnalysisFilter

            caf = CriticalAnalysisFilter.from_settings(settings)
        embedder = Embedder.get()
        return cls(settings=settings, identifier=identifier,
                   embed=lambda texts: embedder.encode(texts, cache=True),  # source sentences recur
                   chat=chat, caf=caf, **overrides)

    def warm_up(self) -> None:
        """Embed every source sentence and ready the local checks, so that the first answers of a
        long-running session (the REPL, the app) are as fast as the later ones."""
        from app.generation.extractive import source_sentences
        from judges.local import warm_up

        sources = list(self.identifier.knowledge_base)
        self.embed([s for source in sources for s in source_sentences(source.body)])
        if self.caf is not None:
            warm_up(SourceText.of(s) for s in sources)

    def source_text(self, source_id: str) -> SourceText | None:
        source = self.identifier.knowledge_base.get(source_id)
        return SourceText.of(source) if source else None

    def topic_titles(self) -> list[str]:
        return [source.title for source in self.identifier.knowledge_base]
