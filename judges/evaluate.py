"""Measuring the filter on scenarios: each scenario runs through the same input screen and cascade
the chatbot uses, and its verdict is compared with the expected one."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable

from pydantic import BaseModel

from app.core.records import SourceText, Turn
from app.core.stats import percentile
from judges.cascade import Cascade
from judges.local.crisis import detect_crisis
from judges.scenarios import Scenario
from judges.schema import DraftContext

ResolveSource = Callable[[str], SourceText | None]


class ScenarioResult(BaseModel):
    id: str
    expected: str
    verdict: str
    flagged_by: list[str]
    rule: str = ""
    llm_calls: int = 0
    llm_tokens: int = 0
    escalated: bool = False
    latency_ms: float = 0.0


class EvalReport(BaseModel):
    n: int
    flag_recall: float
    flag_precision: float
    accuracy: float
    crisis_recall: float
    crisis_false_positive_rate: float
    escalation_rate: float
    llm_calls_per_scenario: float
    llm_tokens_per_scenario: float
    latency_ms_p50: float
    latency_ms_p95: float
    per_rule: dict[str, dict[str, float]]
    per_scenario: list[ScenarioResult]


def to_context(scenario: Scenario, resolve: ResolveSource) -> DraftContext:
    sources = []
    for item in scenario.sources:
        if isinstance(item, str):
            found = resolve(item)
            if found is None:
                raise ValueError(f"scenario {scenario.id}: unknown source id {item!r}")
            sources.append(found)
        else:
            sources.append(SourceText(id=item.id, title=item.title, text=item.text))
    history = [Turn(role=t.role, content=t.content) for t in scenario.history]
    return DraftContext(user=scenario.user, draft=scenario.response, sources=sources, history=history)


def judge_scenario(scenario: Scenario, cascade: Cascade, resolve: ResolveSource) -> ScenarioResult:
    """What the chatbot would do: crisis input goes to the crisis route; anything else is judged."""
    started = time.perf_counter()
    ctx = to_context(scenario, resolve)
    if detect_crisis(ctx.user, cascade.resources).flagged:
        return ScenarioResult(id=scenario.id, expected=scenario.expected, verdict="crisis",
                              flagged_by=["crisis"], rule=scenario.rule,
                              latency_ms=(time.perf_counter() - started) * 1000)
    result = cascade.run(ctx)
    verdict = "reject" if result.failed_closed else result.verdict
    return ScenarioResult(
        id=scenario.id, expected=scenario.expected, verdict=verdict, flagged_by=result.flagged_by,
        rule=scenario.rule, llm_calls=result.llm_calls, llm_tokens=result.llm_tokens,
        escalated=result.escalated, latency_ms=(time.perf_counter() - started) * 1000)


def evaluate(scenarios: list[Scenario], cascade: Cascade, resolve: ResolveSource) -> EvalReport:
    results = [judge_scenario(s, cascade, resolve) for s in scenarios]
    return summarise(results)


def _ratio(numerator: int, denominator: int) -> float:
    return round(numerator / denominator, 4) if denominator else 0.0


def summarise(results: list[ScenarioResult]) -> EvalReport:
    should_flag = [r for r in results if r.expected != "pass"]
    flagged = [r for r in results if r.verdict != "pass"]
    crises = [r for r in results if r.expected == "crisis"]
    non_crises = [r for r in results if r.expected != "crisis"]
    by_rule: dict[str, list[ScenarioResult]] = defaultdict(list)
    for r in results:
        by_rule[r.rule or "(none)"].append(r)
    per_rule = {
        rule: {"n": len(rs),
               "flag_recall": _ratio(sum(r.verdict != "pass" for r in rs if r.expected != "pass"),
                                     sum(r.expected != "pass" for r in rs)),
               "false_flag_rate": _ratio(sum(r.verdict != "pass" for r in rs if r.expected == "pass"),
                                         sum(r.expected == "pass" for r in rs)),
               "accuracy": _ratio(sum(r.verdict == r.expected for r in rs), len(rs))}
        for rule, rs in sorted(by_rule.items())
    }
    latencies = [r.latency_ms for r in results]
    return EvalReport(
        n=len(results),
        flag_recall=_ratio(sum(r.verdict != "pass" for r in should_flag), len(should_flag)),
        flag_precision=_ratio(sum(r.expected != "pass" for r in flagged), len(flagged)),
        accuracy=_ratio(sum(r.verdict == r.expected for r in results), len(results)),
        crisis_recall=_ratio(sum(r.verdict == "crisis" for r in crises), len(crises)),
        crisis_false_positive_rate=_ratio(sum(r.verdict == "crisis" for r in non_crises), len(non_crises)),
        escalation_rate=_ratio(sum(r.escalated for r in results), len(results)),
        llm_calls_per_scenario=round(sum(r.llm_calls for r in results) / (len(results) or 1), 3),
        llm_tokens_per_scenario=round(sum(r.llm_tokens for r in results) / (len(results) or 1), 1),
        latency_ms_p50=round(percentile(latencies, 50), 2),
        latency_ms_p95=round(percentile(latencies, 95), 2),
        per_rule=per_rule,
        per_scenario=results,
    )
