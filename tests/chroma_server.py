"""A throwaway Chroma server for the index tests: `chroma run` (it ships with chromadb) from this
virtualenv, on a loopback port, its data in a temporary folder, stopped and removed afterwards. If
it cannot start, the tests that need it skip, unless CAFBOT_TEST_REQUIRE_CHROMA=1 (CI)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers import free_port, required, stop, unavailable

REQUIRE = "CAFBOT_TEST_REQUIRE_CHROMA"
REQUIRED = required(REQUIRE)
STARTUP_S = 60


def _unavailable(reason: str) -> None:
    unavailable(REQUIRE, reason)


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
    port = free_port()
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
        stop(server)
        shutil.rmtree(folder, ignore_errors=True)
