"""The knowledge base: validated Markdown sources, loaded from a folder or ingested from documents."""

from app.kb.loader import KnowledgeBase, load_knowledge_base
from app.kb.schema import Source, SourceMeta

__all__ = ["KnowledgeBase", "Source", "SourceMeta", "load_knowledge_base"]
