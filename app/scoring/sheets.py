"""Rating sheets both ways. A rater's sheet is blinded (no run, role, condition, model or other
raters' scores) and carries, per row, when the store last saw that score; importing checks the
whole sheet first and writes all of it or nothing, and never overwrites a score changed since."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from app.core.records import Record
from app.core.rubric import Rubric
from app.scoring.tables import (
    SheetError,
    read_table,
    require_columns,
    sheet_row,
    whole_number,
    write_table,
)
from app.store import Item, Score, ScoreConflict, ScoreStore

TICKS = {"1": True, "x": True, "yes": True, "y": True, "true": True,
         "0": False, "no": False, "n": False, "false": False}
BASIS = "scored_at"  # the store's time for the row's score when exported: leave it as it is
MAX_ERRORS = 20


class ImportReport(Record):
    saved: int
    unchanged: int
    unscored: int


def rater_sheet(store: ScoreStore, rubric: Rubric, rater: str, collection: str | None = None) -> pd.DataFrame:
    rows = []
    for position, (item, score) in enumerate(store.queue(rater, collection), 1):
        ticks = score.criteria if score else {}
        rows.append({"item_id": item.item_id, "rater": rater, "position": position,
                     "conversation_so_far": _context(item), "question": item.question, "answer": item.answer,
                     "cited_sources": _sources(item),
                     **{c.id: ("" if c.id not in ticks else int(ticks[c.id])) for c in rubric.criteria},
                     "score": score.score if score else "", "comment": score.comment if score else "",
                     BASIS: score.scored_at if score else ""})
    if not rows:
        raise SheetError(f"rater {rater!r} has no items{f' in {collection!r}' if collection else ''}; "
                         "assign some first (`cafbot score assign`).")
    return pd.DataFrame(rows)


def export_rater_sheet(store: ScoreStore, rubric: Rubric, rater: str, path: Path,
                       collection: str | None = None) -> Path:
    frames = {"scores": rater_sheet(store, rubric, rater, collection)}
    if path.suffix.lower() == ".xlsx":
        frames["rubric"] = rubric_table(rubric)
    return write_table(frames, path)


def rubric_table(rubric: Rubric) -> pd.DataFrame:
    rows = [{"column": c.id, "one point for": c.title, "how to decide": c.guidance} for c in rubric.criteria]
    rows += [{"column": "score", "one point for": f"{level}: {text}", "how to decide": ""}
             for level, text in sorted(rubric.levels.items())]
    rows.append({"column": "", "one point for": "instructions", "how to decide": rubric.instructions})
    return pd.DataFrame(rows)


def import_sheet(store: ScoreStore, rubric: Rubric, path: Path) -> ImportReport:
    frame = read_table(path)
    require_columns(frame, path, ("item_id", "rater", "score"))
    criteria = [c.id for c in rubric.criteria if c.id in frame.columns]
    raters = set(store.raters())
    assigned = {(a.rater, a.item_id) for a in store.assignments()}
    known_items = set(store.item_ids())
    current = {(s.rater, s.item_id): s for s in store.scores()}
    errors: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    scores, expected = [], {}
    unchanged = unscored = 0

    for index, row in frame.iterrows():
        number = sheet_row(int(index))

        def fail(column: str, message: str, number: int = number) -> None:
            errors.append(f"{path.name} row {number}, column {column}: {message}")

        rater, item_id = row["rater"], row["item_id"]
        if not item_id and not rater and not row["score"]:
            continue  # a blank line
        if rater not in raters:
            fail("rater", f"no rater {rater!r} in the store")
            continue
        if item_id not in known_items:
            fail("item_id", f"no item {item_id!r} in the store")
            continue
        if (rater, item_id) not in assigned:
            fail("item_id", f"item {item_id} is not assigned to {rater}")
            continue
        if (rater, item_id) in seen:
            fail("item_id", f"{item_id} by {rater} again (first on row {seen[(rater, item_id)]})")
            continue
        seen[(rater, item_id)] = number
        ticks, bad = _ticks(row, criteria)
        for column in bad:
            fail(column, f"{row[column]!r} is not a tick (use 1 or 0, or leave it empty)")
        if bad:
            continue
        if not row["score"] and not ticks:
            unscored += 1
            continue
        score = whole_number(row["score"], rubric.max_score) if row["score"] else None
        if row["score"] and score is None:
            fail("score", f"{row['score']!r} is not a whole number from 0 to {rubric.max_score}")
            continue
        if ticks and len(ticks) != len(rubric.criteria):
            missing = [c.id for c in rubric.criteria if c.id not in ticks]
            fail(missing[0], f"tick every criterion or none ({', '.join(missing)} left empty)")
            continue
        if ticks and score is not None and score != sum(ticks.values()):
            fail("score", f"{score}, but {sum(ticks.values())} criteria are ticked")
            continue
        new = Score(rater=rater, item_id=item_id, score=score if score is not None else sum(ticks.values()),
                    criteria=ticks, comment=row.get("comment", ""), via="sheet")
        stored = current.get((rater, item_id))
        if stored and (stored.score, stored.criteria, stored.comment) == (new.score, new.criteria, new.comment):
            unchanged += 1
            continue
        if stored and stored.scored_at != row.get(BASIS, ""):
            fail("score", f"the store has a newer score for {item_id} by {rater} ({stored.score}, given "
                          f"{stored.scored_at[:16]} via {stored.via}); export a fresh sheet or leave the row as it was")
            continue
        scores.append(new)
        expected[(rater, item_id)] = stored.scored_at if stored else None

    if errors:
        shown = errors[:MAX_ERRORS]
        more = f"\n… and {len(errors) - MAX_ERRORS} more" if len(errors) > MAX_ERRORS else ""
        raise SheetError(f"{path}: nothing imported, {len(errors)} problem(s):\n" + "\n".join(shown) + more)
    try:
        saved = store.save_scores(scores, expected)
    except ScoreConflict as error:
        raise SheetError(f"{path}: {error}; import it again to see which rows") from error
    return ImportReport(saved=saved, unchanged=unchanged, unscored=unscored)


def analysis_sheet(store: ScoreStore, collection: str) -> pd.DataFrame:
    """Unblinded, for analysis only: every human score with its item's role, condition, sample, turn."""
    items = {item.item_id: item for item in store.items(collection)}
    rows = [{"item_id": s.item_id, "rater": s.rater, "score": s.score,
             **{k: items[s.item_id].hidden.get(k, "") for k in ("role", "condition", "sample", "turn")}}
            for s in store.scores(collection)]
    return pd.DataFrame(rows, columns=["item_id", "rater", "score", "role", "condition", "sample", "turn"])


def _ticks(row: pd.Series, criteria: list[str]) -> tuple[dict[str, bool], list[str]]:
    ticks, bad = {}, []
    for column in criteria:
        value = row[column].lower()
        if value in TICKS:
            ticks[column] = TICKS[value]
        elif value:
            bad.append(column)
    return ticks, bad


def _context(item: Item) -> str:
    return "\n\n".join(f"User: {e.user}\nBot: {e.assistant}" for e in item.context)


def _sources(item: Item) -> str:
    return "\n\n".join(f"[{s.id}] {s.title}\n{s.text}" for s in item.sources)
