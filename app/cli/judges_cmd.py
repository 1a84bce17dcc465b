"""`cafbot judges ...`: list the judges, evaluate the filter on scenario files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from app.cli.common import console, friendly_errors, load_settings
from app.core.config import REPO_ROOT
from app.core.errors import ConfigError

cli = typer.Typer(no_args_is_help=True)
DEFAULT_SCENARIOS = REPO_ROOT / "scenarios" / "judges" / "test"


def parse_tiers(text: str) -> list[int]:
    try:
        tiers = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        tiers = []
    if not tiers or any(t not in (0, 1, 2) for t in tiers):
        raise ConfigError(f"--tiers {text!r}: give tier numbers from 0, 1, 2 separated by commas, e.g. 0,1")
    return tiers


@cli.command("list")
@friendly_errors
def list_judges() -> None:
    """The judges, the rules they enforce, when they apply and their local checks."""
    from judges.registry import load_judges

    table = Table(title="Judges")
    for column in ("judge", "rules", "applies when", "local checks", "max verdict"):
        table.add_column(column)
    for j in load_judges():
        table.add_row(*(escape(str(cell)) for cell in (j.name, ", ".join(j.rules), j.applies_when,
                                                        ", ".join(j.local_checks), j.severity.max_verdict)))
    console.print(table)


@cli.command("train")
@friendly_errors
def train_judges(
    out: Annotated[Path | None, typer.Option(help="Folder for the artefacts (default: the package's own).")] = None,
    if_needed: Annotated[bool, typer.Option(
        "--if-needed", help="Only the checks not built yet, built for other features or on other data "
                            "(what make runs before the app and the tests).")] = False,
) -> None:
    """Fit every learned check on the train splits and write its artefact and model card."""
    from app.core.learning import artefact_cache, artefacts
    from judges.local import role_model
    from screening import context_model, request_kind, screen_model, screen_training

    folder = out or artefacts.ARTEFACTS_DIR
    wanted = []
    # What each fit learns from besides its data: the context model reads the others' readings.
    reads = {context_model.NAME: (screen_model.NAME, role_model.NAME, request_kind.NAME)}

    def fit_context(_encode, _name: str, into: Path) -> artefacts.ModelCard:
        # It learns from the other checks' readings, so it is fitted after them, with them loaded.
        from judges.local.resources import Resources

        return context_model.train(Resources(embedder, artefacts_dir=into, with_context=False), into)

    # In this order: the context model reads the screen's artefact as it was just written.
    for module, fit in ((screen_model, screen_training.train), (role_model, role_model.fit_and_save),
                        (request_kind, request_kind.train), (context_model, fit_context)):
        why = artefacts.why_retrain(module.NAME, feature_version=module.FEATURE_VERSION,
                                    current_hash=module.current_hash(), folder=folder)
        learns_from_new = any(name in reads.get(module.NAME, ()) for name, _ in wanted)
        if why and if_needed and not learns_from_new and artefact_cache.restore(
                module.NAME, feature_version=module.FEATURE_VERSION, data_hash=module.current_hash(),
                folder=folder, reads=reads.get(module.NAME, ())):
            console.print(f"[bold]{escape(module.NAME)}[/]: {escape(why)}; the same build was in "
                          f"{escape(str(artefact_cache.CACHE_DIR))}, copied")
        elif why or not if_needed:
            wanted.append((module.NAME, fit))
            if why:
                console.print(f"[bold]{escape(module.NAME)}[/]: {escape(why)}; training it (seeded)")
    if not wanted:
        console.print(f"[dim]the learned checks in {escape(str(folder))} are up to date[/]")
        return
    from app.core.embeddings import Embedder

    embedder = Embedder()

    def encode(texts: list[str]):
        return embedder.encode(list(texts))

    for name, fit in wanted:
        card = fit(encode, embedder.name, folder)
        try:
            artefact_cache.keep(name, folder, reads=reads.get(name, ()))
        except OSError as error:  # a cache that cannot be written costs the next clone time, nothing else
            console.print(f"[dim]could not keep {escape(name)} in {escape(str(artefact_cache.CACHE_DIR))}: {escape(str(error))}[/]")
        console.print(f"[bold]{escape(card.name)}[/]: {escape(str(card.split_sizes))}")
        for variant, metrics in card.dev_metrics.items():
            summary = {k: v for k, v in metrics.items() if k != "per_category"}
            console.print(f"  dev ({escape(variant)}): {escape(str(summary))}")
    console.print(f"[dim]wrote {escape(str(folder))}[/]")


@cli.command("eval")
@friendly_errors
def eval_judges(
    files: Annotated[list[Path] | None, typer.Argument(help="Scenario .jsonl files or folders (default: the test split).")] = None,
    tiers: Annotated[str, typer.Option(help="Tiers to run, e.g. 0 or 0,1 or 0,1,2.")] = "0,1,2",
    paper_mode: Annotated[bool, typer.Option("--paper-mode", help="Screen every applicable judge with the LLM.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the metrics as JSON here.")] = None,
    profile: Annotated[str | None, typer.Option("--profile", "-p")] = None,
) -> None:
    """Run scenarios through the input screen and the filter a user turn uses; print the figures."""
    from app.cli.chat import local_server_if_needed
    from app.core.embeddings import Embedder
    from app.core.models import model_for
    from app.core.records import InputScreen, SourceText
    from app.core.scenarios import load_scenarios
    from app.kb import load_knowledge_base
    from app.retrieval import open_identifier
    from app.screen import screen_message, screened_route
    from judges.evaluate import evaluate
    from judges.filter import CriticalAnalysisFilter
    from judges.local.resources import Resources

    settings = load_settings(**({"profile": profile} if profile else {}))
    chosen = parse_tiers(tiers)
    settings.caf.tiers, settings.caf.paper_mode = chosen, paper_mode
    paths = _expand(files or [DEFAULT_SCENARIOS])
    scenarios = load_scenarios(paths)
    kb = load_knowledge_base(settings.knowledge_base)

    def resolve(source_id: str) -> SourceText | None:
        source = kb.get(source_id)
        return SourceText.of(source) if source else None

    with local_server_if_needed(settings):
        embedder = Embedder()
        # The screen reads a message's spelling as a user turn does (the identifier's English speller).
        identifier = open_identifier(settings, embedder, show_progress=False)
        resources = Resources.from_settings(settings, embedder if settings.local_embeddings else None,
                                            identifier.correct_english)
        # The judges' verdict on the scenario's own draft: no refiner rewrites it here.
        caf = CriticalAnalysisFilter.from_settings(settings, resources, refiner=None)
        screener = model_for("screener", settings) if 1 in chosen else None
        mode = "on" if chosen != [0] else "tier0"

        def screened(message: str, history: list) -> InputScreen:
            """As a user turn: read after the previous user message's screen, itself read as its
            own turn was (with the messages before it)."""
            users = [t for t in history if t.role == "user"]
            earlier = [t.content for t in users]
            return screen_message(
                message, settings=settings, resources=resources, screener=screener,
                llm_allowed=mode == "on", has_conversation=bool(history),
                previous=screened(earlier[-1], users[:-1]) if earlier else None, earlier=earlier).screen

        def screen(message: str, history: list) -> str:
            return screened_route(screened(message, history))

        def review(ctx):
            return caf.review(ctx, turn=1, mode=mode).report

        report = evaluate(scenarios, screen, review, resolve)
    _print(report, paths, tiers)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(report.model_dump_json(indent=2), encoding="utf-8")
        console.print(f"[dim]wrote {escape(str(json_out))}[/]")


def _expand(paths: list[Path]) -> list[Path]:
    from app.core.scenarios import scenario_files

    files = scenario_files(paths)
    if not files:
        raise ConfigError(f"no .jsonl scenario files in {', '.join(map(str, paths))}")
    return files


def _print(report, paths: list[Path], tiers: str) -> None:
    table = Table(title=f"Per rule ({len(paths)} files, tiers {escape(tiers)})")
    for column in ("rule", "n", "flag recall", "false flags", "accuracy"):
        table.add_column(column, justify="left" if column == "rule" else "right")
    for rule, figures in report.per_rule.items():
        table.add_row(escape(rule), str(int(figures["n"])), f"{figures['flag_recall']:.2f}",
                      f"{figures['false_flag_rate']:.2f}", f"{figures['accuracy']:.2f}")
    console.print(table)
    if report.per_category:
        by_category = Table(title="Per category (input screen)")
        for column in ("category", "n", "crisis recall / false alarms", "route accuracy"):
            by_category.add_column(column, justify="left" if column == "category" else "right")
        for category, figures in report.per_category.items():
            rate = figures.get("crisis_recall", figures.get("false_crisis_rate"))
            kind = "recall" if "crisis_recall" in figures else "false"
            route = figures.get("route_accuracy")
            by_category.add_row(escape(category), str(int(figures["n"])), f"{rate:.2f} ({kind})",
                                f"{route:.2f}" if route is not None else "-")
        console.print(by_category)
    overall = Table(title="Overall")
    overall.add_column("metric")
    overall.add_column("value", justify="right")
    for key, value in report.model_dump(exclude={"per_rule", "per_category", "per_scenario"}).items():
        overall.add_row(escape(key), f"{value:.3f}" if isinstance(value, float) else escape(str(value)))
    console.print(overall)
