"""Turns per second with 1, 2 and 4 replicas on one Postgres and one Chroma server, against one
process on SQLite; same machine, same run, the same index on the same Chroma server.

Run: .venv/bin/python bench/bench_replicas.py [--turns 30] [--replicas 1,2,4] [--json OUT]

Each replica is its own process with its own data dir (bench/replica.py), on the offline default
(the real embedder, screens and filter). All replicas start their turns together, each on a
conversation of its own; throughput is every turn answered divided by the wall time until the last
replica finishes. It starts a throwaway Postgres (pg_ctl) and Chroma server (`chroma run`).
Compare the ratios, not the absolute figures: on a machine with fewer cores than replicas, the
replicas share the cores, and what the figure shows is what the shared stores cost on top.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.replica import Replica
from tests.chroma_server import chroma_server
from tests.postgres import postgres_cluster


def throughput(settings_for, replicas: int, turns: int) -> dict:
    """Turns per second of `replicas` processes answering `turns` turns each, all at once."""
    with ExitStack() as stack:
        started = []
        for n in range(replicas):
            replica = Replica(settings_for(n))
            stack.callback(replica.close)
            started.append(replica)
        for replica in started:
            replica.wait_ready()
        begun = time.perf_counter()
        with ThreadPoolExecutor(replicas) as pool:
            results = list(pool.map(lambda r: (r.send(run=turns), r.read())[1], started))
        seconds = time.perf_counter() - begun
    answered = sum(r["turns"] - r["errors"] for r in results)
    return {"replicas": replicas, "turns": answered, "errors": sum(r["errors"] for r in results),
            "seconds": round(seconds, 2), "turns_per_s": round(answered / seconds, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30, help="turns per replica")
    parser.add_argument("--replicas", default="1,2,4", help="replica counts to measure, comma-separated")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    counts = [int(n) for n in args.replicas.split(",")]
    root = Path(tempfile.mkdtemp(prefix="cafbot-bench-replicas-"))
    with chroma_server() as chroma_url, postgres_cluster() as postgres:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("CAFBOT_")}
        subprocess.run([str(Path(sys.executable).with_name("cafbot")), "kb", "index"], cwd=root, check=True,
                       capture_output=True, env={**environment, "CAFBOT_RETRIEVAL__CHROMA_URL": chroma_url})
        retrieval = {"chroma_url": chroma_url}

        def on_sqlite(n: int) -> dict:
            return {"data_dir": root / f"sqlite-{n}", "retrieval": retrieval}

        def on_postgres(run: int):
            def settings(n: int) -> dict:
                return {"data_dir": root / f"pg-{run}-{n}", "retrieval": retrieval, "store_url": postgres.url,
                        "checkpointer": {"kind": "postgres", "postgres_url": postgres.libpq_url}}
            return settings

        rows = [{"stores": "SQLite", **throughput(on_sqlite, 1, args.turns)}]
        rows += [{"stores": "Postgres", **throughput(on_postgres(n), n, args.turns)} for n in counts]
    baseline = rows[0]["turns_per_s"]
    for row in rows:
        row["vs_one_sqlite_process"] = round(row["turns_per_s"] / baseline, 2) if baseline else None
    print(f"{'stores':<9} {'replicas':>8} {'turns':>6} {'errors':>6} {'turns/s':>8} {'ratio':>6}")
    for row in rows:
        print(f"{row['stores']:<9} {row['replicas']:>8} {row['turns']:>6} {row['errors']:>6} "
              f"{row['turns_per_s']:>8} {row['vs_one_sqlite_process']:>6}")
    if args.json:
        args.json.write_text(json.dumps({"cores": os.cpu_count(), "turns_per_replica": args.turns, "rows": rows},
                                        indent=2) + "\n")


if __name__ == "__main__":
    main()
