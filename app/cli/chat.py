"""`cafbot ask` (one question) and `cafbot chat` (a conversation in the terminal)."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from typing import Annotated, Any

import typer
from rich.markup import escape

from app.cli.common import console, err_console, friendly_errors, load_settings
from app.cli.render import show_answer, show_sources, show_trace
from app.core.config import Settings
from app.core.errors import CafbotError
from app.core.records import CafMode, TurnTrace
from app.session import Chatbot

ProfileOption = Annotated[str | None, typer.Option("--profile", "-p", help="offline, local or openai")]
CafOption = Annotated[CafMode | None, typer.Option("--caf", help="The filter for these turns: on, off (research only) or tier0 (local checks only). Default: the configuration's.")]


def open_chatbot(stack: ExitStack, profile: str | None, **services: Any) -> Chatbot:
    """The configured chatbot, with its local model server if the profile needs one; `services`
    replace parts of it (the drift tests' `chat=` model)."""
    overrides = {"profile": profile} if profile else {}
    settings = load_settings(**overrides)
    stack.enter_context(local_server_if_needed(settings))
    with console.status("Loading the knowledge base and index…"):
        if services:
            from app.graph.services import Services

            return stack.enter_context(Chatbot(settings, Services.from_settings(settings, **services)))
        return stack.enter_context(Chatbot(settings, show_progress=False))


def local_server_if_needed(settings: Settings):
    from app.core.models.local_server import serve_if_needed

    return serve_if_needed(settings)


@friendly_errors
def ask(
    question: Annotated[str, typer.Argument(help="Your question, in quotes; - reads it from standard input.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer and its trace as JSON.")] = False,
    thread: Annotated[str | None, typer.Option(help="Continue this conversation thread.")] = None,
    profile: ProfileOption = None,
    caf: CafOption = None,
) -> None:
    """Ask one question and print the answer, its sources and the trace."""
    if question == "-":
        question = sys.stdin.read()
    with ExitStack() as stack:
        bot = open_chatbot(stack, profile)
        thread_id = thread or bot.new_thread(label="cli-ask")
        trace = bot.ask(thread_id, question, caf=caf)
    if as_json:
        typer.echo(json.dumps(trace_json(trace), indent=2, ensure_ascii=False))
        return
    show_answer(trace)
    show_trace(trace)
    console.print(f"[dim]thread {escape(thread_id)}: continue with --thread {escape(thread_id)}[/]")


def trace_json(trace: TurnTrace) -> dict:
    return {"answer": trace.answer, "citations": trace.citations, "thread_id": trace.thread_id,
            "route": trace.route, "total_ms": round(trace.total_ms, 1),
            "trace": trace.model_dump(mode="json")}


HELP = "Commands: /sources  /trace  /reset  /delete  /quit"


@friendly_errors
def chat(
    thread: Annotated[str | None, typer.Option(help="Resume this conversation thread.")] = None,
    profile: ProfileOption = None,
    caf: CafOption = None,
) -> None:
    """A conversation in the terminal. Conversations are saved and can be resumed with --thread."""
    with ExitStack() as stack:
        bot = open_chatbot(stack, profile)
        with console.status("Getting ready…"):
            bot.services.warm_up()
        thread_id = thread or bot.new_thread(label="cli-chat")
        last: TurnTrace | None = None
        about = bot.services.profile
        console.print(f"[bold]{escape(about.service)}[/] — information about {escape(about.topic)} from a checked "
                      f"knowledge base. Not a substitute for your care team.\n[dim]{HELP}  (thread {escape(thread_id)})[/]")
        if thread and (history := bot.messages(thread_id)):
            console.print(f"[dim]Resumed: {len(history) // 2} earlier turns.[/]")
        while True:
            try:
                text = console.input("[bold cyan]you>[/] ")
            except (EOFError, KeyboardInterrupt):
                console.print()
                break
            command = text.strip().lower()
            if command in ("/quit", "/exit", "/q"):
                break
            if command == "/help":
                console.print(HELP)
            elif command == "/sources":
                show_sources(last)
            elif command == "/trace":
                show_trace(last)
            elif command == "/reset":  # the old conversation is kept; say how to delete it
                old, thread_id, last = thread_id, bot.new_thread(label="cli-chat"), None
                console.print(f"[dim]New conversation (thread {escape(thread_id)}). The previous one is "
                              f"kept; delete it with: cafbot conversations delete {escape(old)}[/]")
            elif command == "/delete":
                answer = console.input("Delete this conversation from every store? (y/N) ")
                if answer.strip().lower() not in ("y", "yes"):
                    console.print("[dim]Kept.[/]")
                    continue
                bot.delete(thread_id)
                old, thread_id, last = thread_id, bot.new_thread(label="cli-chat"), None
                console.print(f"[dim]Deleted conversation {escape(old)}. New conversation "
                              f"(thread {escape(thread_id)}).[/]")
            else:
                try:
                    last = bot.ask(thread_id, text, caf=caf)
                except CafbotError as error:  # the REPL survives; the conversation is unchanged
                    err_console.print(f"[red]{escape(str(error))}[/]", highlight=False, soft_wrap=True)
                    continue
                show_answer(last)
        console.print(f"[dim]Saved. Resume with: cafbot chat --thread {escape(thread_id)}[/]")
