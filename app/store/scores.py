"""The scoring store: items to score (snapshots of answers in their context), raters, who scores
what in which order, their scores and the AI pre-ratings. Every write is its own transaction, so
a score is kept the moment it is given, whatever happens to the page or the process after."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field
from sqlalchemy import Connection, text
from sqlalchemy.exc import IntegrityError

from app.core.errors import CafbotError
from app.core.records import Record, utc_now
from app.store.database import Database

RATER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"


class ScoreConflict(CafbotError):
    """A score changed in the store after the caller read it; nothing was written."""


class Exchange(Record):
    user: str
    assistant: str


class CitedSource(Record):
    id: str
    title: str
    text: str


class Item(Record):
    """One answer to score, as the user saw it, with what a rater needs to judge it."""

    item_id: str
    collection: str
    question: str
    answer: str
    context: list[Exchange] = Field(default_factory=list)  # the earlier exchanges, oldest first
    sources: list[CitedSource] = Field(default_factory=list)
    hidden: dict[str, Any] = Field(default_factory=dict)  # role, condition, sample, turn, run, model
    created_at: str = ""


class Score(Record):
    rater: str
    item_id: str
    score: int = Field(ge=0, le=4)
    criteria: dict[str, bool] = Field(default_factory=dict)  # empty when given as a number only
    comment: str = ""
    scored_at: str = Field(default_factory=utc_now)
    via: Literal["app", "sheet"] = "app"
    revisions: int = 0


class CriterionRating(Record):
    met: bool
    reason: str = ""


class AiRating(Record):
    """A model's score on the rubric: labelled with the model, kept apart from human scores."""

    item_id: str
    model: str
    score: int = Field(ge=0, le=4)
    criteria: dict[str, CriterionRating]
    rated_at: str = Field(default_factory=utc_now)


class Assignment(Record):
    rater: str
    item_id: str
    position: int
    seed: int


class ScoreStore:
    def __init__(self, db: Database):
        self.db = db

    # -- items ---------------------------------------------------------------------------------
    def add_items(self, items: Iterable[Item]) -> int:
        """Add items not already stored (by id); returns how many were new. An item stored with
        other cited sources than it cites now is mended (see `_mend_sources`)."""
        added = 0
        with self.db.engine.begin() as db:
            for item in items:
                result = db.execute(text("""
                    INSERT INTO score_items (item_id, collection, created_at, question, answer, context, sources, hidden)
                    VALUES (:item_id, :collection, :created_at, :question, :answer, :context, :sources, :hidden)
                    ON CONFLICT (item_id) DO NOTHING"""), _item_row(item))
                added += result.rowcount
                if not result.rowcount:
                    _mend_sources(db, item)
        return added

    def items(self, collection: str | None = None) -> list[Item]:
        with self.db.engine.connect() as db:
            rows = db.execute(text(f"SELECT {_ITEM_COLUMNS} FROM score_items i {_IN_COLLECTION}"),
                              {"c": collection}).all()
        return [_item(row) for row in rows]

    def item_ids(self, collection: str | None = None) -> list[str]:
        """The ids alone, in the order `items` gives them, without reading the items' text."""
        with self.db.engine.connect() as db:
            return [row[0] for row in db.execute(text(f"SELECT i.item_id FROM score_items i {_IN_COLLECTION}"),
                                                  {"c": collection})]

    def item(self, item_id: str) -> Item | None:
        with self.db.engine.connect() as db:
            row = db.execute(text(f"SELECT {_ITEM_COLUMNS} FROM score_items i WHERE i.item_id = :i"),
                             {"i": item_id}).first()
        return _item(row) if row else None

    def collections(self) -> dict[str, int]:
        """Each collection with its number of items, in the order they were added."""
        with self.db.engine.connect() as db:
            rows = db.execute(text("SELECT collection, count(*) FROM score_items GROUP BY collection "
                                   "ORDER BY min(created_at)")).all()
        return {row[0]: row[1] for row in rows}

    # -- raters and assignments ----------------------------------------------------------------
    def add_rater(self, rater: str) -> bool:
        with self.db.engine.begin() as db:
            result = db.execute(text("INSERT INTO raters (rater, created_at) VALUES (:r, :at) "
                                     "ON CONFLICT (rater) DO NOTHING"), {"r": rater, "at": utc_now()})
        return bool(result.rowcount)

    def raters(self) -> list[str]:
        with self.db.engine.connect() as db:
            return [row[0] for row in db.execute(text("SELECT rater FROM raters ORDER BY created_at, rater"))]

    def add_assignments(self, assignments: Iterable[Assignment]) -> int:
        added = 0
        with self.db.engine.begin() as db:
            for a in assignments:
                result = db.execute(text("""
                    INSERT INTO assignments (rater, item_id, position, seed, assigned_at)
                    VALUES (:rater, :item_id, :position, :seed, :at) ON CONFLICT (rater, item_id) DO NOTHING"""),
                    {**a.model_dump(), "at": utc_now()})
                added += result.rowcount
        return added

    def assignments(self, collection: str | None = None) -> list[Assignment]:
        with self.db.engine.connect() as db:
            rows = db.execute(text("""
                SELECT a.rater, a.item_id, a.position, a.seed FROM assignments a
                JOIN score_items i ON i.item_id = a.item_id
                WHERE (CAST(:c AS TEXT) IS NULL OR i.collection = :c) ORDER BY a.rater, a.position"""), {"c": collection}).all()
        return [Assignment(rater=r[0], item_id=r[1], position=r[2], seed=r[3]) for r in rows]

    def queue(self, rater: str, collection: str | None = None) -> list[tuple[Item, Score | None]]:
        """A rater's items in their own order, each with the rater's score so far (or None)."""
        with self.db.engine.connect() as db:
            rows = db.execute(text(f"""
                SELECT {_ITEM_COLUMNS}, {_SCORE_COLUMNS}
                FROM assignments a JOIN score_items i ON i.item_id = a.item_id
                LEFT JOIN scores s ON s.rater = a.rater AND s.item_id = a.item_id
                WHERE a.rater = :r AND (CAST(:c AS TEXT) IS NULL OR i.collection = :c) ORDER BY a.position"""),
                {"r": rater, "c": collection}).all()
        width = _ITEM_COLUMNS.count(",") + 1
        return [(_item(row[:width]), _score(row[width:]) if row[width] is not None else None) for row in rows]

    # -- scores ------------------------------------------------------------------------------
    def save_score(self, score: Score) -> Score:
        """Save (or change) one score at once; returns it as stored."""
        try:
            with self.db.engine.begin() as db:
                return _upsert(db, score)
        except IntegrityError as error:
            raise CafbotError(f"item {score.item_id} is not assigned to rater {score.rater}") from error

    def save_scores(self, scores: list[Score], expected: dict[tuple[str, str], str | None]) -> int:
        """Save many scores in one transaction, only if none changed since the caller read them:
        `expected[(rater, item_id)]` is the `scored_at` the caller saw (None: no score then).
        Raises ScoreConflict, writing nothing, if any differs."""
        with self.db.engine.begin() as db:
            for score in scores:
                current = _score_row(db, score.rater, score.item_id)
                seen = expected.get((score.rater, score.item_id))
                if (current.scored_at if current else None) != seen:
                    raise ScoreConflict(
                        f"the score by {score.rater} for item {score.item_id} changed in the store "
                        f"({current.scored_at if current else 'removed'}) after it was read; nothing was imported")
                _upsert(db, score)
        return len(scores)

    def scores(self, collection: str | None = None) -> list[Score]:
        with self.db.engine.connect() as db:
            rows = db.execute(text(f"""
                SELECT {_SCORE_COLUMNS} FROM scores s JOIN score_items i ON i.item_id = s.item_id
                WHERE (CAST(:c AS TEXT) IS NULL OR i.collection = :c) ORDER BY s.item_id, s.rater"""), {"c": collection}).all()
        return [_score(row) for row in rows]

    def score(self, rater: str, item_id: str) -> Score | None:
        with self.db.engine.connect() as db:
            return _score_row(db, rater, item_id)

    # -- AI pre-ratings ------------------------------------------------------------------------
    def save_ai_rating(self, rating: AiRating) -> None:
        with self.db.engine.begin() as db:
            db.execute(text("""
                INSERT INTO ai_ratings (item_id, model, score, criteria, rated_at)
                VALUES (:item_id, :model, :score, :criteria, :rated_at)
                ON CONFLICT (item_id, model) DO UPDATE SET score = excluded.score,
                    criteria = excluded.criteria, rated_at = excluded.rated_at"""),
                {**rating.model_dump(exclude={"criteria"}),
                 "criteria": json.dumps({k: v.model_dump() for k, v in rating.criteria.items()})})

    def ai_ratings(self, collection: str | None = None) -> list[AiRating]:
        with self.db.engine.connect() as db:
            rows = db.execute(text("""
                SELECT r.item_id, r.model, r.score, r.criteria, r.rated_at FROM ai_ratings r
                JOIN score_items i ON i.item_id = r.item_id
                WHERE (CAST(:c AS TEXT) IS NULL OR i.collection = :c) ORDER BY r.item_id, r.model"""), {"c": collection}).all()
        return [AiRating(item_id=r[0], model=r[1], score=r[2], criteria=json.loads(r[3]), rated_at=r[4])
                for r in rows]


# Every query names the items table `i` and the scores table `s`, so one list serves them all.
_ITEM_COLUMNS = "i.item_id, i.collection, i.created_at, i.question, i.answer, i.context, i.sources, i.hidden"
_IN_COLLECTION = "WHERE (CAST(:c AS TEXT) IS NULL OR i.collection = :c) ORDER BY i.created_at, i.item_id"
_SCORE_COLUMNS = "s.rater, s.item_id, s.score, s.criteria, s.comment, s.scored_at, s.via, s.revisions"


def _item_row(item: Item) -> dict[str, Any]:
    return {"item_id": item.item_id, "collection": item.collection, "created_at": item.created_at or utc_now(),
            "question": item.question, "answer": item.answer,
            "context": json.dumps([e.model_dump() for e in item.context]),
            "sources": json.dumps([s.model_dump() for s in item.sources]), "hidden": json.dumps(item.hidden)}


def _item(row) -> Item:
    return Item(item_id=row[0], collection=row[1], created_at=row[2], question=row[3], answer=row[4],
                context=json.loads(row[5]), sources=json.loads(row[6]), hidden=json.loads(row[7]))


def _mend_sources(db: Connection, item: Item) -> None:
    """An item added before its sources were read from its answer may lack some the answer cites
    (a card or extractive answer sent instead of the draft cites what the draft did not): adding it
    again gives it those. A source already stored keeps its text, so what was scored stays as it was."""
    row = db.execute(text("SELECT sources FROM score_items WHERE item_id = :i"), {"i": item.item_id}).first()
    stored = {source["id"]: source for source in json.loads(row[0])}
    sources = [stored.get(source.id, source.model_dump()) for source in item.sources]
    if [source["id"] for source in sources] != list(stored):
        db.execute(text("UPDATE score_items SET sources = :s WHERE item_id = :i"),
                   {"s": json.dumps(sources), "i": item.item_id})


def _score(row) -> Score:
    return Score(rater=row[0], item_id=row[1], score=row[2], criteria=json.loads(row[3]), comment=row[4],
                 scored_at=row[5], via=row[6], revisions=row[7])


def _score_row(db: Connection, rater: str, item_id: str) -> Score | None:
    row = db.execute(text(f"SELECT {_SCORE_COLUMNS} FROM scores s WHERE s.rater = :r AND s.item_id = :i"),
                     {"r": rater, "i": item_id}).first()
    return _score(row) if row else None


def _upsert(db: Connection, score: Score) -> Score:
    row = db.execute(text("""
        INSERT INTO scores (rater, item_id, score, criteria, comment, scored_at, via, revisions)
        VALUES (:rater, :item_id, :score, :criteria, :comment, :scored_at, :via, 0)
        ON CONFLICT (rater, item_id) DO UPDATE SET score = excluded.score, criteria = excluded.criteria,
            comment = excluded.comment, scored_at = excluded.scored_at, via = excluded.via,
            revisions = scores.revisions + 1
        RETURNING revisions"""),
        {**score.model_dump(exclude={"revisions", "criteria"}), "criteria": json.dumps(score.criteria)}).first()
    return score.model_copy(update={"revisions": row[0]})
