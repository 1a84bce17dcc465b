"""A throwaway Chroma server for the index tests: `chroma run` (it ships with chromadb) from this
virtualenv, on a loopback port, its data in a temporary folder, stopped and removed afterwards. If
it cannot start, the tests that need it skip, unless CAFBOT_TEST_REQUIRE_CHROMA=1 (CI)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REQUIRED = os.environ.get("CAFBOT_TEST_REQUIRE_CHROMA") == "1"
STARTUP_S = 60


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"CAFBOT_TEST_REQUIRE_CHROMA=1 but {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _beats(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@contextmanager
def chroma_server() -> Iterator[str]:
    """Yields the URL of a new, empty Chroma server."""
    chroma = shutil.which("chroma", path=str(Path(sys.executable).parent))
    if chroma is None:
        _unavailable(f"no chroma command beside {sys.executable} (is chromadb installed?)")
    folder = Path(tempfile.mkdtemp(prefix="cafbot-chroma-"))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with open(folder / "log", "wb") as log:
        server = subprocess.Popen([chroma, "run", "--path", str(folder / "data"), "--host", "127.0.0.1",
                                   "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
                                  env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    try:
        deadline = time.monotonic() + STARTUP_S
        while not _beats(url):
            if server.poll() is not None or time.monotonic() > deadline:
                said = (folder / "log").read_text(errors="replace").strip().splitlines()[-3:]
                _unavailable(f"`chroma run` on port {port} did not answer its heartbeat within "
                             f"{STARTUP_S} s (exit code {server.poll()}): {' / '.join(said)}")
            time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)
