"""What every sub-command shares: loading settings and turning errors into clear messages."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console

from app.core.config import Settings
from app.core.errors import CafbotError, ConfigError

console = Console()
err_console = Console(stderr=True)
P = ParamSpec("P")
R = TypeVar("R")


def load_settings(**overrides) -> Settings:
    try:
        return Settings(**overrides)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()
        )
        raise ConfigError(f"Invalid configuration: {problems}") from error


def friendly_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Print a CafbotError as one clear line and exit 1, without a traceback."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except CafbotError as error:
            err_console.print(f"[bold red]error:[/] {error}", highlight=False)
            raise typer.Exit(1) from None

    return wrapper
