"""`cafbot ui`: the chat in the browser, a local Streamlit server (the README's first command)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from app.cli.common import console, friendly_errors, load_settings
from app.core.access import hash_code
from app.core.errors import ConfigError

SCRIPT = Path(__file__).resolve().parent.parent / "ui" / "streamlit_app.py"


@friendly_errors
def ui(
    port: Annotated[int, typer.Option(help="Port to serve on.")] = 8501,
    host: Annotated[str, typer.Option(help="Address to listen on; 0.0.0.0 to reach it from other machines.")] = "127.0.0.1",
    profile: Annotated[str | None, typer.Option("--profile", "-p", help="offline, local or openai")] = None,
    make_hash: Annotated[bool, typer.Option("--hash-code", help="Make a staff access code's hash for cafbot.toml, and exit.")] = False,
) -> None:
    """Open the chat in your browser: a local web app on the offline default unless configured."""
    if make_hash:
        code = typer.prompt("Staff access code (8 characters or more)", hide_input=True, confirmation_prompt=True)
        typer.echo(f'[ui]\nstaff_code_hash = "{hash_code(code)}"')
        return
    from app.core.embeddings import Embedder
    from app.core.models.local_server import is_listening
    from app.retrieval import open_identifier

    settings = load_settings(**({"profile": profile} if profile else {}))
    if is_listening(host if host != "0.0.0.0" else "127.0.0.1", port):
        raise ConfigError(f"port {port} on {host} is already in use; choose another with --port")
    # Built here, with progress, so that the first visitor does not wait behind a silent spinner.
    # A first start on a machine also exports the embedder to ONNX: seconds with nothing to show.
    with console.status("Loading the sentence embedder…"):
        embedder = Embedder()
    open_identifier(settings, embedder, show_progress=True)
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0") else host
    console.print(f"cafbot is starting at [bold]http://{escape(shown)}:{port}[/] (profile "
                  f"{settings.profile}). Open it in your browser; Ctrl-C stops it.", highlight=False)
    env_profile = {"CAFBOT_PROFILE": profile} if profile else {}
    command = [sys.executable, "-m", "streamlit", "run", str(SCRIPT),
               "--server.port", str(port), "--server.address", host, "--server.headless", "true",
               "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false",
               "--client.toolbarMode", "minimal", "--client.showErrorDetails", "none",
               "--theme.baseFontSize", "17"]
    sys.stdout.flush()
    # This process becomes the server: Ctrl-C and a supervisor's SIGTERM reach Streamlit directly,
    # and no orphaned server outlives the command.
    os.execve(sys.executable, command, {**os.environ, **env_profile})
