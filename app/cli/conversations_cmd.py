"""`cafbot conversations`: list, show, delete and purge saved conversations.

Only the two stores are opened (`app.session.Conversations`): no model, no embedder, no index.
What is shown comes from the turn log, where e-mail addresses and phone numbers are masked.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from app.cli.common import console, err_console, load_settings
from app.core.errors import CafbotError
from app.session import Conversations

cli = typer.Typer(no_args_is_help=True)
P = ParamSpec("P")
R = TypeVar("R")
ThreadArgument = Annotated[str, typer.Argument(help="The conversation's id (see `cafbot conversations list`).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


class BadOption(CafbotError):
    """An option's value cannot be used; the message names the option and an example."""


def one_line_errors(command: Callable[P, R]) -> Callable[P, R]:
    """A CafbotError becomes one escaped line (ids and paths may hold `[/]`) and exit code 1."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except CafbotError as error:
            err_console.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper


def open_conversations() -> Conversations:
    return Conversations(load_settings())


def parse_age(value: str, option: str = "--older-than") -> timedelta:
    """`30d` (days) or `12h` (hours), a whole number of at least 1."""
    match = re.fullmatch(r"\s*(\d+)\s*([dh])\s*", value.lower())
    if not match or int(match.group(1)) < 1:
        raise BadOption(f"{option}: {value!r} is not an age; use a whole number of days or hours, "
                        "such as 30d or 12h.")
    number = int(match.group(1))
    return timedelta(days=number) if match.group(2) == "d" else timedelta(hours=number)


def _when(iso: str | None) -> str:
    return iso[:16].replace("T", " ") if iso else "-"


@cli.command("list")
@one_line_errors
def list_conversations(
    as_json: JsonOption = False,
    limit: Annotated[int | None, typer.Option(help="Show only the most recent ones.")] = None,
) -> None:
    """List saved conversations, most recent activity first."""
    with open_conversations() as conversations:
        found = conversations.recent(limit=limit)
    if as_json:
        typer.echo(json.dumps([c.model_dump(mode="json") for c in found], indent=2, ensure_ascii=False))
        return
    if not found:
        console.print("No saved conversations.")
        return
    table = Table("id", "created", "last turn", "turns", "label", "CAF mode")
    for c in found:
        table.add_row(escape(c.thread_id), _when(c.created_at), _when(c.last_turn_at), str(c.turns),
                      escape(c.label), escape(c.caf_mode))
    console.print(table)


@cli.command()
@one_line_errors
def show(thread: ThreadArgument, as_json: JsonOption = False) -> None:
    """Show one conversation's turns: the message, the answer and the route of each."""
    with open_conversations() as conversations:
        conversation = conversations.get(thread)
        turns = conversations.turns(thread)
    if as_json:
        typer.echo(json.dumps({"conversation": conversation.model_dump(mode="json"),
                               "turns": [t.model_dump(mode="json") for t in turns]},
                              indent=2, ensure_ascii=False))
        return
    label = f" ({escape(conversation.label)})" if conversation.label else ""
    console.print(f"[bold]Conversation {escape(thread)}[/]{label}: {len(turns)} turns, created "
                  f"{_when(conversation.created_at)}, CAF {escape(conversation.caf_mode)}", highlight=False)
    for trace in turns:
        console.print(f"\n[dim]turn {trace.turn} · {escape(trace.route)} · {_when(trace.started_at)}[/]")
        console.print(f"[bold cyan]you:[/] {escape(trace.user_message)}", highlight=False)
        console.print(f"[bold]cafbot:[/] {escape(trace.answer)}", highlight=False)


@cli.command()
@one_line_errors
def delete(
    thread: ThreadArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a conversation from every store (its saved state and its turn log)."""
    with open_conversations() as conversations:
        conversations.require(thread)
        if not yes:
            typer.confirm(f"Delete conversation {thread} from every store? This cannot be undone",
                          abort=True)
        conversations.delete(thread)
    console.print(f"Deleted conversation {escape(thread)}.", highlight=False)


@cli.command()
@one_line_errors
def purge(
    older_than: Annotated[str, typer.Option("--older-than", help="Delete conversations idle for longer than this: 30d (days) or 12h (hours).")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say how many would be deleted.")] = False,
) -> None:
    """Delete every conversation whose last activity is older than --older-than, from every store."""
    age = parse_age(older_than)
    with open_conversations() as conversations:
        if dry_run:
            count = len(conversations.idle(age))
            console.print(f"{count} conversation(s) idle for more than {escape(older_than)} would be deleted.")
            return
        count = len(conversations.purge(age))
    console.print(f"Deleted {count} conversation(s) idle for more than {escape(older_than)}.")
