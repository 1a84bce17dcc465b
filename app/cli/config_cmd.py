"""`cafbot config show`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from app.cli.common import friendly_errors, load_settings

cli = typer.Typer(no_args_is_help=True)


@cli.command("show")
@friendly_errors
def show(profile: Annotated[str | None, typer.Option("--profile", "-p")] = None) -> None:
    """Print the effective configuration (API keys masked)."""
    settings = load_settings(**({"profile": profile} if profile else {}))
    typer.echo(json.dumps(settings.masked(), indent=2))
