"""What every sub-command shares: loading settings and turning errors into clear messages."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console
from rich.markup import escape

from app.core.config import Settings, setting_origin
from app.core.errors import CafbotError, ConfigError

console = Console()
err_console = Console(stderr=True)
P = ParamSpec("P")
R = TypeVar("R")


def load_settings(**overrides) -> Settings:
    try:
        return Settings(**overrides)
    except ValidationError as error:
        problems = "; ".join(_problem(e["loc"], e["msg"]) for e in error.errors())
        raise ConfigError(f"Invalid configuration: {problems}. `cafbot config show` prints the "
                          "effective configuration.") from error
    except SettingsError as error:  # a value the settings sources could not even parse
        raise ConfigError(f"Invalid configuration: {error}. Lists and tables in environment "
                          "variables are JSON, e.g. CAFBOT_CAF__TIERS='[0, 1]'.") from error


def _problem(loc: tuple, message: str) -> str:
    where = setting_origin(loc)
    name = ".".join(str(p) for p in loc) or "(root)"
    text = f"{name}: {' '.join(message.split())}"
    return f"{where}: {text}" if where else text


def friendly_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Print a CafbotError as one clear line and exit 1, without a traceback."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except CafbotError as error:
            print_error(str(error))
            raise typer.Exit(1) from None
        except Exception as error:
            # The stores name their file when they open; a page damaged deeper in a SQLite file
            # shows only when read, by code that knows no file name. Still one line, with the way on.
            damage = error if isinstance(error, sqlite3.DatabaseError) else getattr(error, "orig", None)
            if not isinstance(damage, sqlite3.DatabaseError):
                raise
            reason = (str(damage).strip().splitlines() or [type(damage).__name__])[0][:200]
            print_error(f"a database in the data dir cannot be read ({reason}). `cafbot doctor` "
                        "names the damaged file and how to replace it.")
            raise typer.Exit(1) from None

    return wrapper


def print_error(message: str) -> None:
    # Escaped: a message quoting a file name or a title with [brackets] is data, not markup;
    # soft-wrapped: one line however narrow the terminal.
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
