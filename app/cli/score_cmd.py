"""`cafbot score …`: compliance scoring from the command line: add a run's answers, assign raters,
hand out and take back sheets, follow progress, analyse, report, and pre-rate with the judge model."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from app.cli.common import console, friendly_errors, load_settings
from app.core.errors import ConfigError
from app.core.rubric import load_rubric
from app.store import Database, ScoreStore

cli = typer.Typer(no_args_is_help=True)

CollectionArg = Annotated[str, typer.Argument(help="The collection: a drift run's id, or the name given to saved chats.")]


@contextmanager
def _store():
    settings = load_settings()
    db = Database.open(settings.data_dir, settings.store_url)
    try:
        yield ScoreStore(db), settings
    finally:
        db.close()


def _known(store: ScoreStore, collection: str) -> str:
    collections = store.collections()
    if collection not in collections:
        raise ConfigError(f"no collection {collection!r} in the store; known: {', '.join(collections) or 'none'} "
                          "(`cafbot score add-run RUN` adds one).")
    return collection


@cli.command("add-run")
@friendly_errors
def add_run(run: Annotated[Path, typer.Argument(help="A drift run's folder (it holds manifest.json).")]) -> None:
    """Add every final answer of a drift run as an item to score (its collection is the run's id)."""
    from app.kb.loader import load_knowledge_base
    from app.scoring.items import items_from_run

    with _store() as (store, settings):
        items = items_from_run(run, load_knowledge_base(settings.knowledge_base))
        added = store.add_items(items)
        collection = items[0].collection if items else run.name
    console.print(f"{added} new item(s) in collection [bold]{escape(collection)}[/] "
                  f"({len(items) - added} already there).")


@cli.command("add-chats")
@friendly_errors
def add_chats(
    threads: Annotated[list[str], typer.Argument(help="Conversation ids (`cafbot conversations list`).")],
    collection: Annotated[str, typer.Option(help="The collection to add them to.")] = "saved-chats",
) -> None:
    """Add every answer of saved conversations as items to score."""
    from app.kb.loader import load_knowledge_base
    from app.scoring.items import items_from_chats
    from app.store import TurnLog

    with _store() as (store, settings):
        items = items_from_chats(TurnLog(store.db), threads, collection, load_knowledge_base(settings.knowledge_base))
        added = store.add_items(items)
    console.print(f"{added} new item(s) in collection [bold]{escape(collection)}[/].")


@cli.command()
@friendly_errors
def assign(
    collection: CollectionArg,
    raters: Annotated[str, typer.Option(help="Comma-separated rater names; new ones are added.")],
    per_item: Annotated[int, typer.Option(min=1, help="Raters per item.")] = 2,
    seed: Annotated[int, typer.Option(help="Seeds who gets what and each rater's order (recorded).")] = 0,
) -> None:
    """Give each item of a collection to PER_ITEM raters, blind and in a shuffled order per rater.
    Running it again with more raters or a higher --per-item only tops up."""
    from app.scoring.assign import assign as assign_items

    with _store() as (store, _settings):
        new = assign_items(store, _known(store, collection), [r.strip() for r in raters.split(",") if r.strip()],
                           per_item=per_item, seed=seed)
    for rater, count in new.items():
        console.print(f"{escape(rater)}: {count} new item(s)")


@cli.command()
@friendly_errors
def status(collection: Annotated[str | None, typer.Argument(help="One collection (default: all).")] = None) -> None:
    """Items per collection, and each rater's progress."""
    with _store() as (store, _settings):
        collections = store.collections()
        if collection:
            _known(store, collection)
        table = Table("collection", "items", "rater", "assigned", "scored", "AI-rated")
        for name, count in collections.items():
            if collection and name != collection:
                continue
            assigned: dict[str, int] = {}
            for a in store.assignments(name):
                assigned[a.rater] = assigned.get(a.rater, 0) + 1
            scored: dict[str, int] = {}
            for s in store.scores(name):
                scored[s.rater] = scored.get(s.rater, 0) + 1
            ai = len({r.item_id for r in store.ai_ratings(name)})
            if not assigned:
                table.add_row(escape(name), str(count), "(none assigned)", "", "", str(ai))
            for n, rater in enumerate(sorted(assigned)):
                table.add_row(escape(name) if n == 0 else "", str(count) if n == 0 else "", escape(rater),
                              str(assigned[rater]), str(scored.get(rater, 0)), str(ai) if n == 0 else "")
    console.print(table if table.rows else "No items to score yet: `cafbot score add-run RUN` adds a drift run.")


@cli.command()
@friendly_errors
def export(
    rater: Annotated[str, typer.Option(help="Whose sheet: only their items and their own scores.")],
    out: Annotated[Path, typer.Option(help="The sheet to write: .csv or .xlsx (with the rubric as a second sheet).")],
    collection: Annotated[str | None, typer.Option(help="Only this collection.")] = None,
) -> None:
    """Write a rater's blinded sheet to fill in offline (no run, condition, model or others' scores)."""
    from app.scoring.sheets import export_rater_sheet

    with _store() as (store, _settings):
        path = export_rater_sheet(store, load_rubric(), rater, out, collection)
    console.print(f"Wrote {escape(str(path))}. Fill in the criteria (1 or 0) or the score; leave scored_at as it is.")


@cli.command("import")
@friendly_errors
def import_(sheet: Annotated[Path, typer.Argument(help="A filled-in sheet (.csv or .xlsx).")]) -> None:
    """Read a filled-in sheet back: all of it is checked first, and nothing is written unless every row is valid."""
    from app.scoring.sheets import import_sheet

    with _store() as (store, _settings):
        report = import_sheet(store, load_rubric(), sheet)
    console.print(f"{report.saved} score(s) saved, {report.unchanged} unchanged, {report.unscored} row(s) not scored yet.")


@cli.command()
@friendly_errors
def table(
    collection: CollectionArg,
    out: Annotated[Path, typer.Option(help="The sheet to write (.csv or .xlsx).")],
) -> None:
    """Write every human score with its role, condition, sample and turn (unblinded: for analysis)."""
    from app.scoring.sheets import analysis_sheet
    from app.scoring.tables import write_table

    with _store() as (store, _settings):
        frame = analysis_sheet(store, _known(store, collection))
    write_table({"scores": frame}, out)
    console.print(f"Wrote {len(frame)} score(s) to {escape(str(out))}.")


@cli.command()
@friendly_errors
def analyse(
    sheet: Annotated[Path, typer.Argument(help="Columns item_id, rater, score; optional role, condition, sample, turn.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the analysis as JSON here.")] = None,
) -> None:
    """Medians, agreement (within 1 point, Krippendorff's alpha, weighted kappa) and the shares >= 2 and >= 3."""
    from app.scoring.analysis import analyse as analyse_scores
    from app.scoring.analysis import load_sheet
    from app.scoring.report import analysis_tables

    result = analyse_scores(load_sheet(sheet))
    for title, frame in analysis_tables(result).items():
        console.print(f"[bold]{title}[/]")
        console.print(escape(frame.to_string(index=False)) if len(frame) else "(none)")
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result.model_dump(mode="json"), indent=2), encoding="utf-8")
        console.print(f"Wrote {escape(str(json_out))}.")


@cli.command()
@friendly_errors
def report(
    collection: CollectionArg,
    out: Annotated[Path | None, typer.Option(help="The report's folder (default: the data dir's reports/COLLECTION).")] = None,
) -> None:
    """Write a Markdown report with PNG figures, and its tables as CSV."""
    from app.scoring.report import write_report

    with _store() as (store, settings):
        folder = out or settings.data_dir / "reports" / collection
        path = write_report(store, _known(store, collection), folder)
    console.print(f"Wrote {escape(str(path))}.")


@cli.command()
@friendly_errors
def prerate(
    collection: CollectionArg,
    again: Annotated[bool, typer.Option(help="Rate items this model has rated before again.")] = False,
) -> None:
    """Pre-rate every item with the judge model on the same rubric (labelled AI; never a human score)."""
    from app.core.models import model_for
    from app.scoring.prerating import prerate as prerate_items

    with _store() as (store, settings):
        client = model_for("judge", settings)
        if client is None:
            raise ConfigError("AI pre-rating needs a judge model: set models.judge (`cafbot config show`).")

        def progress(item, rating, problem: str) -> None:
            console.print(f"{item.item_id}: " + (f"{rating.score}/4" if rating else f"[red]not rated[/] ({escape(problem)})"))

        rated, failed = prerate_items(store, client, load_rubric(), _known(store, collection), again=again,
                                      on_item=progress)
    console.print(f"{rated} item(s) rated by {escape(client.model_name)}; {failed} failed.")
