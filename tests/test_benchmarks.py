"""Benchmarks are code: each one runs here at its smallest size, so none can rot unnoticed. Their
figures are read by people from a full run (`make bench`), never asserted here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def bench(script: str, *args: str, timeout: int = 600) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CAFBOT_") or k.startswith("CAFBOT_TEST_")}
    result = subprocess.run([sys.executable, str(REPO / "bench" / script), *args], capture_output=True, text=True,
                            timeout=timeout, env=environment)
    assert result.returncode == 0, f"{script} failed:\n{result.stderr[-3000:]}"
    return result.stdout


def test_bench_graph_at_its_smallest():
    assert "p50" in bench("bench_graph.py", "--turns", "3")


def test_bench_retrieval_at_its_smallest():
    assert "p50 ms" in bench("bench_retrieval.py", "--chunks", "300", "--pool", "20")


def test_bench_ask_at_its_smallest():
    out = bench("bench_ask.py", "--runs", "1")
    assert out.count("median") == 4, out  # wall and processor, for each question


def test_bench_caf_at_its_smallest():
    out = bench("bench_caf.py", "--limit", "5")
    assert "paper mode needs" in out and "CAF latency added per passing turn" in out


def test_bench_drift_at_its_smallest():
    assert "turns/s" in bench("bench_drift.py", "--stack", "light", "--turns", "1", "--waves", "1")


def test_bench_replicas_at_its_smallest(tmp_path):
    """Needs Postgres and Chroma's server, as the replica tests do (it starts both itself)."""
    from tests.chroma_server import REQUIRED as CHROMA_REQUIRED
    from tests.postgres import REQUIRED as POSTGRES_REQUIRED

    out = tmp_path / "replicas.json"
    try:
        bench("bench_replicas.py", "--turns", "1", "--replicas", "1", "--json", str(out))
    except AssertionError as failure:
        if "Skipped" in str(failure) and not (CHROMA_REQUIRED or POSTGRES_REQUIRED):
            pytest.skip("bench_replicas needs pg_ctl and chroma")
        raise
    import json

    rows = json.loads(out.read_text())["rows"]
    assert [(r["stores"], r["replicas"], r["turns"], r["errors"]) for r in rows] == [("SQLite", 1, 1, 0), ("Postgres", 1, 1, 0)]
