"""What the Critical Analysis Filter costs: latency added per passing turn, and LLM judge calls and
tokens per turn in our cascade versus "paper mode" (every applicable judge screened by the LLM).

Run: .venv/bin/python bench/bench_caf.py [--limit N] [scenario files or folders]

The LLM judges are scripted (zero latency, tokens counted from the words they receive and return)
and answer as a perfect screener would: the scenario's expected verdict. So the call counts show
the escalation policy's cost, not a model's accuracy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import DEFAULT_KNOWLEDGE_BASE, REPO_ROOT
from app.core.embeddings import Embedder
from app.core.models import RoleClient
from app.core.models.scripted import ScriptedChatModel
from app.core.records import SourceText
from app.core.scenarios import load_scenarios
from app.core.stats import percentile
from app.kb import load_knowledge_base
from judges.cascade import Cascade
from judges.evaluate import to_context
from judges.local.resources import Resources


def main(paths: list[Path], limit: int | None = None) -> None:
    files = [f for p in paths for f in (sorted(p.glob("*.jsonl")) if p.is_dir() else [p])]
    scenarios = [s for s in load_scenarios(files) if s.response is not None and s.expected != "crisis"][:limit]
    kb = load_knowledge_base(DEFAULT_KNOWLEDGE_BASE)

    def resolve(source_id: str) -> SourceText | None:
        source = kb.get(source_id)
        return SourceText.of(source) if source else None

    contexts = [(s, to_context(s, resolve)) for s in scenarios]
    expected_by_draft = {ctx.draft: s.expected for s, ctx in contexts}

    def perfect_screener(messages):
        material = messages[-1].content
        expected = next((v for d, v in expected_by_draft.items() if d and d in material), "pass")
        return {"verdict": expected, "rule": "", "offending": [], "reason": "scripted", "suggested_fix": ""}

    def client(role: str) -> RoleClient:
        return RoleClient(role, f"scripted-{role}", ScriptedChatModel(respond=perfect_screener))

    embedder = Embedder()
    resources = Resources(embedder)
    rows = {}
    for mode, cascade in {
        "cascade (ours)": Cascade(resources=resources, screener=client("screener"), judge=client("judge")),
        "paper mode": Cascade(resources=resources, screener=client("screener"), judge=client("judge"), paper_mode=True),
    }.items():
        benign_calls, benign_tokens, all_calls, all_tokens = [], [], [], []
        for scenario, ctx in contexts:
            result = cascade.run(ctx)
            all_calls.append(result.llm_calls)
            all_tokens.append(result.llm_tokens)
            if scenario.expected == "pass":
                benign_calls.append(result.llm_calls)
                benign_tokens.append(result.llm_tokens)
        rows[mode] = (statistics.mean(benign_calls), statistics.mean(benign_tokens),
                      statistics.mean(all_calls), statistics.mean(all_tokens))

    # Timed on checks that have read none of these drafts (their readings are cached), warmed on
    # other texts first, so each figure is a first reading.
    embedder.clear_cache()
    tier0 = Cascade(resources=Resources(embedder), tiers=(0,))
    tier0.resources.screen_model.read("warming up the classifier")
    passing = [ctx for s, ctx in contexts if s.expected == "pass"]
    latencies = []
    for ctx in passing:
        started = time.perf_counter()
        tier0.run(ctx)
        latencies.append((time.perf_counter() - started) * 1000)

    print(f"{len(contexts)} drafts ({len(passing)} benign) from {len(files)} files\n")
    print(f"{'mode':16} {'calls/benign turn':>18} {'tokens/benign turn':>19} {'calls/turn':>11} {'tokens/turn':>12}")
    for mode, (bc, bt, ac, at) in rows.items():
        print(f"{mode:16} {bc:18.2f} {bt:19.0f} {ac:11.2f} {at:12.0f}")
    ours, paper = rows["cascade (ours)"][0], rows["paper mode"][0]
    ratio = paper / ours if ours else float("inf")
    print(f"\npaper mode needs {ratio:.1f}x the LLM judge calls of our cascade on benign traffic (target >= 5x)")
    print(f"CAF latency added per passing turn (tier 0, offline): p50 {percentile(latencies, 50):.1f} ms, "
          f"p95 {percentile(latencies, 95):.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[REPO_ROOT / "scenarios" / "judges" / "test"])
    parser.add_argument("--limit", type=int, default=None, help="at most this many drafts")
    args = parser.parse_args()
    main(args.paths, args.limit)
