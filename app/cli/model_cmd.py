"""`cafbot serve-model`: run the bundled local model server in the foreground."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from app.cli.common import console, friendly_errors, load_settings


@friendly_errors
def serve_model(
    port: Annotated[int | None, typer.Option(help="Loopback port (default from configuration).")] = None,
    gguf: Annotated[str | None, typer.Option(help="A GGUF file to serve instead of the bundled one.")] = None,
) -> None:
    """Run llama.cpp's OpenAI-compatible server with the bundled GGUF until Ctrl-C.

    It writes the pid file (`llama-server-PORT.pid` in the data dir) that lets `cafbot ask` and
    `cafbot chat` reuse it, and stops with this command (Ctrl-C, SIGTERM, SIGHUP, or SIGKILL on Linux).
    """
    from app.core.models.local_server import pid_file, run_server

    settings = load_settings(profile="local")
    if port:
        settings.local_server.port = port
    if gguf:
        settings.local_server.gguf_path = Path(gguf)
    console.print("Starting the local model server…")
    with run_server(settings) as url:
        console.print(f"Serving on {escape(url)} (OpenAI-compatible; pid file "
                      f"{escape(str(pid_file(settings)))}). Ctrl-C to stop.", highlight=False)
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            console.print("Stopped.")
