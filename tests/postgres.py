"""A throwaway Postgres server for the store tests: a fresh cluster in a temporary folder, on a
loopback port, started with the machine's pg_ctl and removed afterwards. Without pg_ctl (or the
psycopg driver) the tests that need it skip, unless CAFBOT_TEST_REQUIRE_POSTGRES=1 (CI)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REQUIRED = os.environ.get("CAFBOT_TEST_REQUIRE_POSTGRES") == "1"


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"CAFBOT_TEST_REQUIRE_POSTGRES=1 but {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yields a SQLAlchemy URL of an empty database on a new local server."""
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl is None:
        _unavailable("pg_ctl is not installed")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("the psycopg driver is not installed")
    bin_dir = Path(os.path.realpath(pg_ctl)).parent
    # Postgres refuses to run as root; as root, the cluster belongs to the postgres user.
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    # Not under pytest's tmp_path: its parents are closed to other users, postgres among them.
    folder = Path(tempfile.mkdtemp(prefix="cafbot-pg-"))
    if as_user:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", _free_port()

    def run(*command: str) -> None:
        subprocess.run([*as_user, *command], check=True, capture_output=True, timeout=120)

    run(str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    run(str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-l", str(folder / "log"), "-o",
        f"-p {port} -c listen_addresses=127.0.0.1 -k {folder}", "start")
    try:
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "cafbot")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/cafbot"
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)
