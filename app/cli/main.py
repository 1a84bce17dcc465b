"""The `cafbot` command. Sub-commands live beside this file, one module per group."""

from __future__ import annotations

import os

# Set before chromadb or huggingface are imported anywhere: no telemetry, no hub look-ups.
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# wordfreq finds its data files by walking the call stack, at a cost that grows with every module
# already loaded: imported first it takes a tenth of a second, after scikit-learn and LangGraph over
# a second of every command that reads English words.
import wordfreq  # noqa: F401  # isort: skip
import typer

from app.cli import (
    chat,
    config_cmd,
    conversations_cmd,
    drift_cmd,
    eval_cmd,
    judges_cmd,
    kb,
    model_cmd,
    score_cmd,
    ui_cmd,
)
from app.cli.doctor_cmd import doctor
from app.cli.migrate_cmd import migrate

cli = typer.Typer(help="cafbot: a safety-filtered patient-education chatbot.", no_args_is_help=True)
cli.command()(ui_cmd.ui)
cli.command()(chat.ask)
cli.command()(chat.chat)
cli.command("serve-model")(model_cmd.serve_model)
cli.command()(doctor)
cli.command()(migrate)
cli.add_typer(kb.cli, name="kb", help="Check, ingest, index and evaluate a knowledge base.")
cli.add_typer(judges_cmd.cli, name="judges", help="List the judges; evaluate the filter on scenarios.")
cli.add_typer(eval_cmd.cli, name="eval", help="Measure answer quality on answer keys.")
cli.add_typer(drift_cmd.cli, name="drift", help="Drift tests: facilitator runs (CAF on/off), summaries, scripted conversations.")
cli.add_typer(score_cmd.cli, name="score", help="Compliance scoring: items, raters, sheets, analysis, report, AI pre-rating.")
cli.add_typer(config_cmd.cli, name="config", help="Show the effective configuration.")
cli.add_typer(conversations_cmd.cli, name="conversations", help="List, show, delete and purge saved conversations.")


@cli.command()
def graph() -> None:
    """Print the answer graph as a Mermaid diagram."""
    from app.graph.builder import mermaid

    typer.echo(mermaid())


def main() -> None:
    cli()
