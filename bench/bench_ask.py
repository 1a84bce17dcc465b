"""A one-shot `cafbot ask`, start to finish: what a person typing one question waits for, with the
caches an earlier run leaves (the ONNX export, known vectors, the lexicon's literal sets).

Run: .venv/bin/python bench/bench_ask.py [--runs 3] [--data-dir DIR]

Each question is asked `--runs` times in a new process, after one unmeasured run that fills the
caches; it prints each run's wall time and processor time (user + system, which another busy
process on the machine disturbs less) and their medians. On a shared machine, compare figures
taken in one run with each other, not across runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CAFBOT = Path(sys.executable).with_name("cafbot")
QUESTIONS = ["what is clozapine?", "I want to end my life"]  # an answer, and a turn the screen ends


def timed_ask(question: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and processor seconds of one `cafbot ask` in a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([str(CAFBOT), "ask", question], cwd=REPO, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data-dir", help="a data dir with a built index (default: a new one, built by the first run)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "CAFBOT_DATA_DIR": args.data_dir or scratch}
        timed_ask(QUESTIONS[0], env)  # builds the index if the data dir has none, fills the caches
        for question in QUESTIONS:
            runs = [timed_ask(question, env) for _ in range(args.runs)]
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]
            print(f"cafbot ask {question!r}: wall {' '.join(f'{w:.2f}' for w in walls)} s, "
                  f"median {statistics.median(walls):.2f} s; processor median {statistics.median(cpus):.2f} s")


if __name__ == "__main__":
    main()
