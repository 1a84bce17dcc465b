"""`cafbot eval answers`: answer quality on answer keys, through the same turns a user gets."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import track
from rich.table import Table

from app.cli.chat import CafOption, ProfileOption, open_chatbot
from app.cli.common import console, friendly_errors
from app.core.records import TurnTrace

cli = typer.Typer(no_args_is_help=True)


@cli.command("answers")
@friendly_errors
def eval_answers(
    path: Annotated[Path, typer.Argument(help="An answer-key .jsonl file or a folder of them.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the figures and every answer as JSON here.")] = None,
    profile: ProfileOption = None,
    caf: CafOption = None,
    typos: Annotated[float, typer.Option(
        min=0.0, max=1.0, help="Type every message in a hurry: this share of long words gets a slip.")] = 0.0,
    seed: Annotated[int, typer.Option(help="Which slips --typos makes.")] = 0,
) -> None:
    """Ask every question as a new conversation (its history first) and score the answers."""
    from app.evaluation.answers import evaluate, load_cases
    from app.evaluation.typos import with_typos

    cases = load_cases(path)
    with ExitStack() as stack:
        bot = open_chatbot(stack, profile)
        progress = iter(track(range(len(cases)), description="Asking…", console=console,
                              transient=True))

        def ask(history: list[str], question: str) -> TurnTrace:
            next(progress, None)
            thread = bot.new_thread(label="eval answers")
            try:
                for earlier in history:
                    bot.ask(thread, with_typos(earlier, typos, seed), caf=caf)
                return bot.ask(thread, with_typos(question, typos, seed), caf=caf)
            finally:
                bot.delete(thread)  # an evaluation leaves no conversations behind

        report = evaluate(cases, ask)
    typed = f", typed in a hurry: {typos:.0%} of long words slipped, seed {seed}" if typos else ""
    table = Table(title=f"Answer quality ({report.n} questions, {escape(str(path))}{typed})")
    for column in ("kind", "n", "key points", "fully correct", "route", "cited", "must-not"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    for kind, figures in {**report.per_kind, "all": report.model_dump()}.items():
        table.add_row(escape(kind or "-"), str(int(figures["n"])), f"{figures['key_point_coverage']:.2f}",
                      f"{figures['fully_correct']:.2f}", f"{figures['route_accuracy']:.2f}",
                      f"{figures['citation_hit_rate']:.2f}", str(int(figures["must_not_hits"])))
    console.print(table)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(report.model_dump_json(indent=2), encoding="utf-8")
        console.print(f"[dim]wrote {escape(str(json_out))}[/]")


@cli.command("report")
@friendly_errors
def eval_report() -> None:
    """Write docs/results.md and the README's figures from the evaluation files in docs/results/
    (`make results` runs the evaluations first)."""
    from app.evaluation.results import write

    for path in write():
        console.print(f"wrote {escape(str(path))}")
