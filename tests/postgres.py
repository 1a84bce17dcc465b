"""A throwaway Postgres server for the store tests: a fresh cluster in a temporary folder, on a
loopback port, started with the machine's pg_ctl and removed afterwards. Without pg_ctl (or the
psycopg driver) the tests that need it skip, unless CAFBOT_TEST_REQUIRE_POSTGRES=1 (CI)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers import free_port, required, unavailable

REQUIRE = "CAFBOT_TEST_REQUIRE_POSTGRES"
REQUIRED = required(REQUIRE)


def _unavailable(reason: str) -> None:
    unavailable(REQUIRE, reason)


class PostgresServer:
    """A running throwaway server: its SQLAlchemy URL, and stop/start for outage tests."""

    def __init__(self, url: str, run, pg_ctl: str, data: Path, log: str, options: str):
        self.url, self._run, self._pg_ctl, self._data, self._log, self._options = url, run, pg_ctl, data, log, options

    @property
    def libpq_url(self) -> str:
        return self.url.replace("postgresql+psycopg://", "postgresql://")

    def stop(self) -> None:
        self._run(self._pg_ctl, "-D", str(self._data), "-m", "fast", "-w", "stop")

    def start(self) -> None:
        self._run(self._pg_ctl, "-D", str(self._data), "-w", "-l", self._log, "-o", self._options, "start")


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yields a SQLAlchemy URL of an empty database on a new local server."""
    with postgres_cluster() as server:
        yield server.url


@contextmanager
def postgres_cluster() -> Iterator[PostgresServer]:
    """A new local server with an empty database `cafbot`, which the test may stop and start."""
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
    data, port = folder / "data", free_port()

    def run(*command: str) -> None:
        subprocess.run([*as_user, *command], check=True, capture_output=True, timeout=120)

    run(str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    server = PostgresServer(f"postgresql+psycopg://postgres@127.0.0.1:{port}/cafbot", run, str(bin_dir / "pg_ctl"),
                            data, str(folder / "log"), f"-p {port} -c listen_addresses=127.0.0.1 -k {folder}")
    server.start()
    try:
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "cafbot")
        yield server
    finally:  # unchecked: a test may have left it stopped
        subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)
