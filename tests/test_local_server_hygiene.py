"""The local model server dies with the cafbot that started it, and cafbot reuses only a server it
started. A tiny Python HTTP server stands in for llama.cpp (no model is built or loaded)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from contextlib import closing
from pathlib import Path

import pytest

from app.core.config import Settings
from app.core.errors import ConfigError
from app.core.models.local_server import (
    is_listening,
    pid_alive,
    pid_file,
    read_pid_file,
    run_server,
    serve_if_needed,
)
from tests.servers import free_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
REPO = Path(__file__).resolve().parent.parent

FAKE_SERVER = textwrap.dedent("""
    import http.server, json, sys

    class Models(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            found = self.path.rstrip("/") == "/v1/models"
            body = json.dumps({"object": "list", "data": [{"id": "fake"}]}).encode()
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Models).serve_forever()
""")

# A cafbot-like parent: starts the server through run_server, says so, and waits to be killed.
PARENT = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from app.core.config import Settings
    from app.core.models.local_server import run_server

    data_dir, port, fake = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    settings = Settings(profile="local", data_dir=data_dir,
                        local_server={"port": port, "startup_timeout_s": 20})
    with run_server(settings, command=[sys.executable, fake, str(port)]) as url:
        print("ready", url, flush=True)
        while True:
            time.sleep(0.1)
""")


def wait_for(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.fixture
def fake(tmp_path) -> Path:
    path = tmp_path / "fake_server.py"
    path.write_text(FAKE_SERVER, encoding="utf-8")
    return path


def local_settings(tmp_path: Path, port: int) -> Settings:
    return Settings(profile="local", data_dir=tmp_path / "data",
                    local_server={"port": port, "startup_timeout_s": 20})


def start_parent(tmp_path: Path, port: int, fake: Path) -> tuple[subprocess.Popen, int]:
    script = tmp_path / "parent.py"
    script.write_text(PARENT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path / "data"), str(port), str(fake)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    line = parent.stdout.readline()
    assert line.startswith("ready"), parent.stderr.read()
    record = json.loads((tmp_path / "data" / f"llama-server-{port}.pid").read_text())
    assert record["owner_pid"] == parent.pid and record["port"] == port and "fake_server.py" in record["model"]
    assert pid_alive(record["server_pid"])
    return parent, record["server_pid"]


def test_sigkill_of_the_parent_takes_the_server_down(tmp_path, fake):
    port = free_port()
    parent, server = start_parent(tmp_path, port, fake)
    try:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        assert wait_for(lambda: not pid_alive(server), timeout=5), "the server outlived its parent"
        assert wait_for(lambda: not is_listening("127.0.0.1", port), timeout=5)
    finally:
        if pid_alive(server):
            os.kill(server, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_stops_the_server_and_removes_the_pid_file(tmp_path, fake, sig):
    port = free_port()
    parent, server = start_parent(tmp_path, port, fake)
    try:
        parent.send_signal(sig)
        assert parent.wait(timeout=15) == 128 + sig
        assert not pid_alive(server)
        assert not (tmp_path / "data" / f"llama-server-{port}.pid").exists()
    finally:
        if pid_alive(server):
            os.kill(server, signal.SIGKILL)


def test_a_foreign_listener_on_the_port_is_refused(tmp_path, fake):
    with closing(socket.socket()) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        settings = local_settings(tmp_path, port)
        with pytest.raises(ConfigError, match=r"Something else is listening on 127\.0\.0\.1:\d+.*local_server\.port"), \
                serve_if_needed(settings, command=[sys.executable, str(fake), str(port)]):
            pass
        with pytest.raises(ConfigError, match="Something else is listening"), \
                run_server(settings, command=[sys.executable, str(fake), str(port)]):
            pass


def test_a_stale_pid_file_is_removed_and_a_new_server_started(tmp_path, fake):
    port = free_port()
    settings = local_settings(tmp_path, port)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    pid_file(settings).parent.mkdir(parents=True)
    pid_file(settings).write_text(json.dumps({"server_pid": dead.pid, "owner_pid": dead.pid, "port": port}))
    assert read_pid_file(settings) is None and not pid_file(settings).exists()

    pid_file(settings).write_text(json.dumps({"server_pid": dead.pid, "owner_pid": dead.pid, "port": port}))
    with serve_if_needed(settings, command=[sys.executable, str(fake), str(port)]):
        record = read_pid_file(settings)
        assert record is not None and record["server_pid"] != dead.pid and record["owner_pid"] == os.getpid()
        assert is_listening("127.0.0.1", port)
    assert not pid_file(settings).exists() and not pid_alive(record["server_pid"])


def test_a_stale_pid_file_does_not_make_a_foreign_listener_ours(tmp_path):
    with closing(socket.socket()) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        settings = local_settings(tmp_path, port)
        pid_file(settings).parent.mkdir(parents=True)
        pid_file(settings).write_text(json.dumps({"server_pid": 2**22 + 1, "owner_pid": 1, "port": port}))
        with pytest.raises(ConfigError, match="Something else is listening"), serve_if_needed(settings):
            pass
        assert not pid_file(settings).exists()


def test_a_server_cafbot_started_elsewhere_is_reused(tmp_path, fake):
    """As .ci/run does: `cafbot serve-model` in one process, cafbot commands in others."""
    port = free_port()
    parent, server = start_parent(tmp_path, port, fake)
    try:
        never = [sys.executable, "-c", "raise SystemExit(3)"]  # starting another would fail
        with serve_if_needed(local_settings(tmp_path, port), command=never):
            assert is_listening("127.0.0.1", port)
        assert pid_alive(server)  # leaving the block does not stop a server this process did not start
    finally:
        parent.send_signal(signal.SIGTERM)
        parent.wait(timeout=15)


def test_the_offline_profile_starts_nothing(tmp_path):
    with serve_if_needed(Settings(data_dir=tmp_path / "data"), command=["false"]):
        assert not (tmp_path / "data").exists()
