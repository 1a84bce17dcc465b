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


@cli.command("eval")
@friendly_errors
def eval_judges(
    files: Annotated[list[Path] | None, typer.Argument(help="Scenario .jsonl files or folders (default: the test split).")] = None,
    tiers: Annotated[str, typer.Option(help="Tiers to run, e.g. 0 or 0,1 or 0,1,2.")] = "0,1,2",
    paper_mode: Annotated[bool, typer.Option("--paper-mode", help="Screen every applicable judge with the LLM.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the metrics as JSON here.")] = None,
    profile: Annotated[str | None, typer.Option("--profile", "-p")] = None,
) -> None:
    """Run the filter on scenarios and print per-judge and overall figures."""
    from app.cli.chat import local_server_if_needed
    from app.core.embeddings import Embedder
    from app.core.models import model_for
    from app.core.records import SourceText
    from app.kb import load_knowledge_base
    from judges.cascade import Cascade
    from judges.evaluate import evaluate
    from judges.local import Resources
    from judges.scenarios import load_scenarios

    settings = load_settings(**({"profile": profile} if profile else {}))
    paths = _expand(files or [DEFAULT_SCENARIOS])
    scenarios = load_scenarios(paths)
    kb = load_knowledge_base(settings.knowledge_base)

    def resolve(source_id: str) -> SourceText | None:
        source = kb.get(source_id)
        return SourceText.of(source) if source else None

    with local_server_if_needed(settings):
        resources = Resources.from_settings(settings, Embedder() if settings.local_embeddings else None)
        cascade = Cascade(resources=resources, screener=model_for("screener", settings), judge=model_for("judge", settings),
                          tiers=parse_tiers(tiers), paper_mode=paper_mode)
        report = evaluate(scenarios, cascade, resolve)
    _print(report, paths, tiers)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(report.model_dump_json(indent=2), encoding="utf-8")
        console.print(f"[dim]wrote {escape(str(json_out))}[/]")


def _expand(paths: list[Path]) -> list[Path]:
    from judges.scenarios import scenario_files

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
    overall = Table(title="Overall")
    overall.add_column("metric")
    overall.add_column("value", justify="right")
    for key, value in report.model_dump(exclude={"per_rule", "per_scenario"}).items():
        overall.add_row(escape(key), f"{value:.3f}" if isinstance(value, float) else escape(str(value)))
    console.print(overall)
