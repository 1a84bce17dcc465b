"""What people read back: conversations and their turns (and, as they arrive, drift runs, raters
and scores), in one database behind one migration scheme.

It depends on `app.core` only, so the scoring tools and analyses load traces without LangGraph.
LangGraph's checkpointer, which resumes conversations, keeps its own tables.
"""

from app.store.database import Database, StoreError
from app.store.scores import (
    AiRating,
    Assignment,
    CitedSource,
    CriterionRating,
    Exchange,
    Item,
    Score,
    ScoreConflict,
    ScoreStore,
)
from app.store.turns import Conversation, Feedback, TurnConflict, TurnLog

__all__ = ["AiRating", "Assignment", "CitedSource", "Conversation", "CriterionRating", "Database", "Exchange", "Feedback",
           "Item", "Score", "ScoreConflict", "ScoreStore", "StoreError", "TurnConflict", "TurnLog"]
