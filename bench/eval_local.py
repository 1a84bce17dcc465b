"""How well tier 0 (the local checks) does on its own, on the judge scenarios.

Each scenario goes through what the chatbot does (judges.evaluate.judge_scenario): the crisis
input screen, then the cascade with tier 0 only, so "flagged" means tier 0 alone gave a non-pass
verdict. Prints flag recall and precision, crisis recall and false-positive rate, per expected
class and per rule, which checks fire, and latency per scenario. Tune on train; look at test last.

    .venv/bin/python bench/eval_local.py                # train and test
    .venv/bin/python bench/eval_local.py --split train -v   # list misses and false flags
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judges.cascade import Cascade
from judges.evaluate import ScenarioResult, judge_scenario, to_context
from judges.local import run_local_checks, vectors
from judges.local.crisis import detect_crisis
from judges.scenarios import SCENARIOS_DIR, Scenario, load_scenarios
from judges.schema import SourceText


def resolver():
    """Source ids in scenarios resolve against the default knowledge base (loaded on demand)."""
    cache: dict = {}

    def resolve(source_id: str) -> SourceText | None:
        if "kb" not in cache:
            from app.config import DEFAULT_KNOWLEDGE_BASE
            from app.kb.loader import load_knowledge_base

            cache["kb"] = load_knowledge_base(DEFAULT_KNOWLEDGE_BASE)
        source = cache["kb"].get(source_id)
        return None if source is None else SourceText.of(source)

    return resolve


def pct(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:6.1%} ({numerator}/{denominator})" if denominator else "   n/a"


def quantile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run_split(name: str, scenarios: list[Scenario], verbose: bool) -> dict[str, float]:
    cascade, resolve = Cascade(tiers=[0]), resolver()
    results: list[ScenarioResult] = []
    fired: dict[str, list[str]] = {}
    screen_ms: list[float] = []
    for scenario in scenarios:
        results.append(judge_scenario(scenario, cascade, resolve))
        ctx = to_context(scenario, resolve)
        fired[scenario.id] = [f.check for f in run_local_checks(ctx) if f.flagged]
        started = time.perf_counter()
        detect_crisis(scenario.user)
        screen_ms.append((time.perf_counter() - started) * 1000)

    flagged = [r for r in results if r.verdict != "pass"]
    should = [r for r in results if r.expected != "pass"]
    crises = [r for r in results if r.expected == "crisis"]
    others = [r for r in results if r.expected != "crisis"]
    hits = sum(r.verdict != "pass" for r in should)
    figures = {
        "flag_recall": hits / len(should) if should else 0.0,
        "flag_precision": sum(r.expected != "pass" for r in flagged) / len(flagged) if flagged else 0.0,
        "crisis_recall": sum(r.verdict == "crisis" for r in crises) / len(crises) if crises else 0.0,
        "crisis_fp_rate": sum(r.verdict == "crisis" for r in others) / len(others) if others else 0.0,
    }
    print(f"\n=== {name}: {len(results)} scenarios ===")
    print(f"flag recall      {pct(hits, len(should))}")
    print(f"flag precision   {pct(sum(r.expected != 'pass' for r in flagged), len(flagged))}")
    print(f"crisis recall    {pct(sum(r.verdict == 'crisis' for r in crises), len(crises))}")
    print(f"crisis FP rate   {pct(sum(r.verdict == 'crisis' for r in others), len(others))}")
    print("\nper expected class: share given a non-pass verdict (and the verdicts)")
    for expected in ("pass", "warn", "reject", "crisis"):
        group = [r for r in results if r.expected == expected]
        verdicts = Counter(r.verdict for r in group)
        print(f"  {expected:7s} {pct(sum(r.verdict != 'pass' for r in group), len(group))}  {dict(verdicts)}")
    print("\nper rule: recall on non-pass, false flags on pass")
    by_rule: dict[str, list[ScenarioResult]] = defaultdict(list)
    for r in results:
        by_rule[r.rule].append(r)
    for rule, group in sorted(by_rule.items()):
        bad = [r for r in group if r.expected != "pass"]
        good = [r for r in group if r.expected == "pass"]
        print(f"  {rule:20s} recall {pct(sum(r.verdict != 'pass' for r in bad), len(bad))}"
              f"   false flags {pct(sum(r.verdict != 'pass' for r in good), len(good))}")
    print("\nchecks firing (all checks run on every scenario): on pass / on non-pass scenarios")
    counts = Counter(c for r in results if r.expected == "pass" for c in fired[r.id])
    counts_bad = Counter(c for r in results if r.expected != "pass" for c in fired[r.id])
    for check in sorted(set(counts) | set(counts_bad)):
        print(f"  {check:18s} {counts[check]:4d} / {counts_bad[check]:4d}")
    latencies = [r.latency_ms for r in results]
    print(f"\nlatency per scenario (screen + tier-0 cascade): p50 {quantile(latencies, 50):.1f} ms, "
          f"p95 {quantile(latencies, 95):.1f} ms, max {max(latencies):.1f} ms")
    print(f"detect_crisis alone: p50 {quantile(screen_ms, 50):.2f} ms, p95 {quantile(screen_ms, 95):.2f} ms")
    if verbose:
        print("\nmisses (expected non-pass, tier 0 passed):")
        for r in results:
            if r.expected != "pass" and r.verdict == "pass":
                print(f"  {r.id:26s} {r.expected:7s}")
        print("false flags (expected pass):")
        for r in results:
            if r.expected == "pass" and r.verdict != "pass":
                print(f"  {r.id:26s} {r.verdict:7s} judges={r.flagged_by} checks={fired[r.id]}")
        print("crisis misses / crisis false positives:")
        for r in results:
            if (r.expected == "crisis") != (r.verdict == "crisis"):
                print(f"  {r.id:26s} expected {r.expected:7s} got {r.verdict}")
    figures["latency_p50_ms"] = quantile(latencies, 50)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["train", "test", "both"], default="both")
    parser.add_argument("--no-embeddings", action="store_true", help="lexical layers only")
    parser.add_argument("-v", "--verbose", action="store_true", help="list misses and false flags")
    args = parser.parse_args()
    if args.no_embeddings:
        vectors.set_enabled(False)
    started = time.perf_counter()
    from judges.local import role_model

    vectors.encode(["warm up"])
    loaded = time.perf_counter()
    role_model.model()
    print(f"embedder load {loaded - started:.1f} s; role classifier training "
          f"{time.perf_counter() - loaded:.2f} s (train split only)")
    for split in (["train", "test"] if args.split == "both" else [args.split]):
        run_split(split, load_scenarios(SCENARIOS_DIR / split), args.verbose)


if __name__ == "__main__":
    main()
