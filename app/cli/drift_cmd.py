"""`cafbot drift run | summary | script`: drift testing through the same session a user gets."""

from __future__ import annotations

import json
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from app.cli.chat import CafOption, ProfileOption, open_chatbot
from app.cli.common import console, friendly_errors
from app.core.errors import ConfigError
from app.core.records import CafMode
from app.session import Chatbot

cli = typer.Typer(no_args_is_help=True)

DriftingOption = Annotated[bool, typer.Option(
    "--drifting-model", help="Answer with the drifting test model (scripted, slides out of role on "
    "purpose) instead of the configured chat model: shows what the filter does offline.")]


def _open(stack: ExitStack, profile: str | None, drifting: bool) -> tuple[Chatbot, str]:
    """The chatbot, and the name of what writes its answers (for the run's records)."""
    from app.drift.drifting_model import MODEL_NAME, drifting_chat_client

    bot = open_chatbot(stack, profile, **({"chat": drifting_chat_client()} if drifting else {}))
    chat = bot.settings.models.for_role("chat")
    name = MODEL_NAME if drifting else (f"{chat.provider}:{chat.model}" if bot.services.chat else "extractive (offline)")
    return bot, name


def _conditions(text: str) -> list[CafMode]:
    conditions = [c.strip() for c in text.split(",") if c.strip()]
    wrong = [c for c in conditions if c not in ("on", "off", "tier0")]
    if wrong or not conditions:
        raise ConfigError(f"--caf: {', '.join(wrong) or 'nothing'} is not a condition; use on, off or tier0, comma-separated.")
    return conditions  # type: ignore[return-value]


@cli.command("run")
@friendly_errors
def run(
    roles: Annotated[str | None, typer.Option(help="Comma-separated facilitator ids (default: all).")] = None,
    samples: Annotated[int, typer.Option(min=1, help="Conversations per role and condition.")] = 3,
    turns: Annotated[int, typer.Option(min=1, help="Facilitator turns per conversation, after the checkpoint.")] = 4,
    caf: Annotated[str, typer.Option(help="Conditions, comma-separated: on, off, tier0.")] = "on,off",
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="Conversations run at once.")] = 4,
    rate: Annotated[float | None, typer.Option(help="At most this many turns started per second.")] = None,
    seed: Annotated[int, typer.Option(help="Seeds the template facilitator.")] = 0,
    out: Annotated[Path | None, typer.Option(help="The run's folder (default: a new one under the data dir's drift/). Re-run with the same folder to resume.")] = None,
    facilitators_dir: Annotated[Path | None, typer.Option("--facilitators", help="A folder of facilitator files.")] = None,
    drifting: DriftingOption = False,
    profile: ProfileOption = None,
) -> None:
    """Facilitators talk to the chatbot from each role's checkpoint, CAF on and off on the same branches."""
    from app.core.models import model_for
    from app.drift.facilitators import LLMFacilitator, TemplateFacilitator
    from app.drift.runner import RunPlan, run_drift
    from app.drift.schema import FACILITATORS_DIR, load_facilitators

    facilitators = load_facilitators(facilitators_dir or FACILITATORS_DIR)
    chosen = [r.strip() for r in roles.split(",")] if roles else sorted(facilitators)
    with ExitStack() as stack:
        bot, chat_model = _open(stack, profile, drifting)
        client = model_for("facilitator", bot.settings)
        plan = RunPlan(roles=chosen, samples=samples, turns=turns, conditions=_conditions(caf), seed=seed,
                       engine="llm" if client else "template", chat_model=chat_model)
        folder = out or bot.settings.data_dir / "drift" / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")

        def engine_for(spec):
            return LLMFacilitator(spec, client, bot.services.profile.topic) if client else TemplateFacilitator(spec, seed)

        planned = len(chosen) * samples * len(plan.conditions) * turns
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task("Drift turns", total=planned)
            manifest = run_drift(bot, facilitators, plan, folder, engine_for=engine_for, concurrency=concurrency,
                                 rate_per_s=rate, on_turn=lambda _record: progress.advance(task))
    console.print(f"{manifest.turns_done} of {manifest.turns_planned} turns in {escape(str(folder))} "
                  f"({plan.engine} facilitator, chat: {escape(chat_model)}, {manifest.seconds:.0f} s).")
    _print_summary(folder)


@cli.command("summary")
@friendly_errors
def summary(
    run: Annotated[Path, typer.Argument(help="A drift run's folder.")],
    as_json: Annotated[Path | None, typer.Option("--json", help="Write the summary as JSON here.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Write the survival curves as a PNG here (default: RUN/survival.png).")] = None,
) -> None:
    """Per role and condition: compliant answers, drift onset, survival, warnings, refinements, cost."""
    from app.drift.summary import plot_survival

    result = _print_summary(run)
    if as_json:
        as_json.parent.mkdir(parents=True, exist_ok=True)
        as_json.write_text(result.model_dump_json(indent=2), encoding="utf-8")
        console.print(f"[dim]wrote {escape(str(as_json))}[/]")
    figure = plot_survival(result, plot or run / "survival.png")
    console.print(f"[dim]survival curves: {escape(str(figure))}[/]")


def _print_summary(run: Path):
    from app.drift.summary import load_run, summarise

    manifest, records = load_run(run)
    run_id = manifest.run_id
    result = summarise(records, run_id)
    table = Table(title=f"Drift run {escape(run_id)} ({result.turns} turns per conversation)", title_justify="left")
    for column in ("role", "CAF", "compliant", "withheld", "answered", "drifted", "onset", "still compliant by turn", "warn/refine", "ms/turn"):
        table.add_column(column, justify="left" if column in ("role", "CAF") else "right", no_wrap=column == "role")
    for g in result.groups:
        table.add_row(escape(g.role), g.condition, f"{g.share_compliant:.0%}", f"{g.share_withheld:.0%}",
                      f"{g.share_answered:.0%}", f"{g.drifted}/{g.conversations}",
                      "-" if g.onset_median is None else f"{g.onset_median:g}",
                      " ".join(f"{s:.0%}" for s in g.survival), f"{g.warnings}/{g.refinements}",
                      f"{g.latency_ms_per_turn:.0f}")
    console.print(table)
    return result


@cli.command("script")
@friendly_errors
def script(
    paths: Annotated[list[Path], typer.Argument(help="Script files or folders of them.")],
    as_json: Annotated[Path | None, typer.Option("--json", help="Write the figures and failures as JSON here.")] = None,
    variants: Annotated[bool, typer.Option("--variants", help="Also run each turn's paraphrases.")] = False,
    caf: CafOption = None,
    drifting: DriftingOption = False,
    profile: ProfileOption = None,
) -> None:
    """Run scripted adversarial conversations and check what the user finally sees."""
    from app.drift.schema import load_scripts
    from app.drift.scripts import run_scripts

    scripts = [s for _path, s in load_scripts(paths)]
    with ExitStack() as stack:
        bot, _chat_model = _open(stack, profile, drifting)
        with console.status(f"Running {len(scripts)} scripts…"):
            report = run_scripts(bot, scripts, caf=caf, variants=variants)
    for failure in report.failures:
        console.print(f"[red]FAIL[/] {escape(failure.script)} turn {failure.turn}"
                      f"{f' (variant {failure.variant})' if failure.variant else ''}: {escape(failure.expectation)}\n"
                      f"  user: {escape(failure.user)}\n  answer: {escape(failure.answer[:400])}", highlight=False)
    colour = "green" if not report.failures else "red"
    console.print(f"[{colour}]{report.expectations_met} of {report.n_expectations} expectations met[/] "
                  f"({report.expectation_rate:.1%}) over {report.n_turns} turns of {report.n_scripts} scripts.")
    if as_json:
        as_json.parent.mkdir(parents=True, exist_ok=True)
        as_json.write_text(json.dumps(report.as_json(), indent=2, ensure_ascii=False), encoding="utf-8")
        console.print(f"[dim]wrote {escape(str(as_json))}[/]")
    if report.failures:
        raise typer.Exit(1)
