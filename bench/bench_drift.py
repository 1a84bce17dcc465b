"""Drift-run throughput: turns per second at concurrency 1, 4 and 16, with a zero-latency
scripted chat model and with a simulated 500 ms one.

Run: .venv/bin/python bench/bench_drift.py [--stack light] [--turns 4] [--waves 8]

With a zero-latency model a turn is all local work (retrieval, the answer graph, tier-0 checks,
SQLite), so concurrency adds little; with a 500 ms model the wait dominates and concurrency
should multiply throughput until the local work saturates the CPU. All figures come from one run
on this machine; compare them with each other (the ratio to concurrency 1), not across machines.

Throughput is the branches' turns over the time they took: the role checkpoints, written once
per run before any branch starts, are timed apart (a run's one-off cost, reported beside). Each
run gives every worker `--waves` conversations in turn, so the figure is the steady state, not a
single wave's ramp (with one conversation per worker, the run lasts as long as one conversation's
turns one after another, whatever the concurrency) nor its tail (the last conversations run with
workers idle beside them: with four per worker a quarter of the run, with eight an eighth).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Settings
from app.core.embeddings import Embedder
from app.drift.drifting_model import MODEL_NAME, drifting_chat_client
from app.drift.facilitators import TemplateFacilitator
from app.drift.runner import RunPlan, run_drift
from app.drift.schema import load_facilitators
from app.graph.services import Services
from app.retrieval import open_identifier
from app.session import Chatbot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--waves", type=int, default=8, help="conversations per worker, one after another")
    parser.add_argument("--stack", choices=["offline", "light"], default="offline",
                        help="offline: the real embedder and index; light: the tests' hashing embedder and "
                             "keyword identifier, so a turn is the graph, the filter and the stores alone")
    args = parser.parse_args()
    facilitators = load_facilitators()
    roles = sorted(facilitators)
    with tempfile.TemporaryDirectory() as scratch:
        if args.stack == "light":
            from app.kb import load_knowledge_base
            from tests.fakes import HashingEmbedder, KeywordIdentifier

            embedder, identifier = HashingEmbedder(), KeywordIdentifier(load_knowledge_base(Settings().knowledge_base))
        else:
            embedder = Embedder()
            identifier = open_identifier(Settings(data_dir=Path(scratch) / "index"), embedder)
        print(f"{os.cpu_count()} CPUs, {args.stack} stack, {args.turns} turns per conversation, "
              f"{args.waves} conversations per worker (CAF on)")
        for delay in (0.0, 0.5):
            base = None
            for concurrency in (1, 4, 16):
                settings = Settings(data_dir=Path(scratch) / f"d{delay}-{concurrency}")
                services = Services.from_settings(settings, embedder=embedder, identifier=_for(identifier, settings),
                                                  chat=drifting_chat_client(delay_s=delay))
                with Chatbot(settings, services) as bot:
                    services.warm_up()
                    samples = math.ceil(args.waves * concurrency / len(roles))  # branches = roles x samples
                    plan = RunPlan(roles=roles, samples=samples, turns=args.turns, conditions=["on"],
                                   chat_model=MODEL_NAME)
                    manifest = run_drift(bot, facilitators, plan, Path(scratch) / f"run-{delay}-{concurrency}",
                                         engine_for=lambda spec: TemplateFacilitator(spec, 0), concurrency=concurrency)
                rate = manifest.turns_done / (manifest.seconds - manifest.checkpoint_seconds)
                base = base or rate
                print(f"model {delay * 1000:>4.0f} ms  concurrency {concurrency:>2}: {rate:6.2f} turns/s "
                      f"({rate / base:4.1f}x concurrency 1; {len(roles) * samples} conversations, "
                      f"{manifest.turns_done} turns; checkpoints {manifest.checkpoint_seconds:.1f} s)")


def _for(identifier, settings: Settings):
    return identifier.with_settings(settings) if hasattr(identifier, "with_settings") else identifier


if __name__ == "__main__":
    main()
