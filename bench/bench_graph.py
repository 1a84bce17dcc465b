"""The answer graph's own cost per turn, and the offline turn end to end.

Run: .venv/bin/python bench/bench_graph.py [--turns 60]

- "graph overhead": a turn with a zero-latency scripted chat model and the filter off, minus the
  time spent inside source identification and the model call: what LangGraph, the state, the
  prompt building and the SQLite checkpointer add.
- "offline turn": the default configuration end to end (retrieval, extractive answer, tier-0 CAF).
All figures come from one run on this machine; compare them with each other, not across machines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Settings
from app.core.embeddings import Embedder
from app.core.models import RoleClient
from app.core.models.scripted import ScriptedChatModel
from app.core.records import CafMode
from app.core.stats import percentile
from app.graph.services import Services
from app.retrieval import open_identifier
from app.session import Chatbot

QUESTIONS = [
    "Why does clozapine need regular blood tests?",
    "What are negative symptoms?",
    "How can I cope with hearing voices?",
    "What is a long-acting injection and how often is it given?",
    "How can I sleep better on my medicine?",
    "What does an early intervention team do?",
]


def run(bot: Chatbot, turns: int, caf: CafMode = "on") -> list[dict]:
    thread = bot.new_thread(label="bench")
    rows = []
    for i in range(turns):
        started = time.perf_counter()
        trace = bot.ask(thread, QUESTIONS[i % len(QUESTIONS)], caf=caf)
        total = (time.perf_counter() - started) * 1000
        identify = trace.identification.latency_ms if trace.identification else 0.0
        model = sum(c.latency_ms for c in trace.model_calls)
        rows.append({"total": total, "identify": identify, "model": model,
                     "caf": trace.caf.latency_ms if trace.caf else 0.0})
    return rows[2:]  # the first turns warm caches


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp))
        embedder = Embedder()
        identifier = open_identifier(settings, embedder)
        reply = "Clozapine needs regular blood tests [S11]. Please check with your care team."
        chat = RoleClient("chat", "scripted", ScriptedChatModel(respond=lambda messages: reply))
        scripted = Chatbot(settings, Services.from_settings(settings, identifier=identifier, embedder=embedder,
                                                            chat=chat))
        overhead_rows = run(scripted, args.turns, caf="off")
        scripted.close()
        offline = Chatbot(settings, Services.from_settings(settings, identifier=identifier, embedder=embedder,
                                                           chat=None))
        offline_rows = run(offline, args.turns)
        offline.close()

    overhead = [r["total"] - r["identify"] - r["model"] for r in overhead_rows]
    table = [
        ("graph overhead per turn (scripted model, CAF off)", overhead),
        ("  of which: full turn with scripted model", [r["total"] for r in overhead_rows]),
        ("  source identification", [r["identify"] for r in overhead_rows]),
        ("offline turn end to end (extractive + CAF tier 0)", [r["total"] for r in offline_rows]),
        ("  of which: CAF", [r["caf"] for r in offline_rows]),
    ]
    print(f"{'measure (ms)':55} {'p50':>8} {'p95':>8} {'mean':>8}")
    for name, values in table:
        print(f"{name:55} {percentile(values, 50):8.1f} {percentile(values, 95):8.1f} {statistics.mean(values):8.1f}")
    print(f"\n{len(overhead_rows)} turns each; target: graph overhead under 30 ms per turn.")


if __name__ == "__main__":
    main()
