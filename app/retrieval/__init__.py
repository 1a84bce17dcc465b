"""Finding the sources that answer a question: chunking, embeddings, the Chroma + BM25 index,
fusion, multi-part questions, and the three-way outcome (clear, middling, none).

Heavy imports (torch, chromadb) happen only when an identifier or embedder is built.
"""

from __future__ import annotations

from app.core.config import Settings
from app.core.embeddings import Embedder
from app.core.profile import load_profile
from app.core.records import Candidate, Identification
from app.retrieval.identify import SourceIdentifier

__all__ = ["Candidate", "Identification", "SourceIdentifier", "open_identifier"]


def open_identifier(settings: Settings, embedder: Embedder, *, show_progress: bool = False) -> SourceIdentifier:
    """Load the knowledge base, bring its index up to date (re-embedding only changed sources)
    and return an identifier for it. `identifier.index_report` says what the update did."""
    from app.core.models import helper_model
    from app.kb.loader import load_knowledge_base
    from app.retrieval.chroma_store import index_building
    from app.retrieval.examples import ExampleClassifier
    from app.retrieval.index import ChunkIndex
    from app.retrieval.summaries import SummaryChooser

    kb = load_knowledge_base(settings.knowledge_base)
    with index_building(settings):  # one process builds a new local index, any other waits
        index = ChunkIndex(kb, settings, embedder=embedder)
        report = index.sync(show_progress=show_progress)
    chooser = None
    if settings.retrieval.strategy != "retrieval":
        client = helper_model(settings)
        chooser = SummaryChooser(client, kb) if client is not None else None
    examples = ExampleClassifier.fit(kb.examples, lambda texts: embedder.encode(texts, cache=False),
                                     cache_dir=settings.cache_dir, model_name=embedder.name,
                                     show_progress=show_progress,
                                     condition_words=load_profile(settings.knowledge_base).condition_words)
    identifier = SourceIdentifier(kb, index, settings, chooser=chooser, examples=examples)
    identifier.index_report = report
    return identifier
