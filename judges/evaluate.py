"""Measuring the filter on scenarios: each scenario runs through the functions a user turn runs
(the caller hands in the input screen and the filter's review, the very ones the graph calls), and
its verdict and route are compared with the expected ones."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable

from pydantic import BaseModel

from app.core.records import CafReport, SourceText, Turn
from app.core.scenarios import Scenario
from app.core.stats import percentile
from judges.schema import DraftContext

ResolveSource = Callable[[str], SourceText | None]
Screen = Callable[[str, list[Turn]], str]  # (message, the conversation before it) -> route
Review = Callable[[DraftContext], CafReport]


class ScenarioResult(BaseModel):
    id: str
    expected: str
    verdict: str
    flagged_by: list[str]
    rule: str = ""
    category: str = ""
    language: str = "en"
    expected_route: str | None = None
    route: str = ""
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
    route_accuracy: float | None = None  # over English scenarios that name a route
    escalation_rate: float
    llm_calls_per_scenario: float
    llm_tokens_per_scenario: float
    latency_ms_p50: float
    latency_ms_p95: float
    per_rule: dict[str, dict[str, float]]
    per_category: dict[str, dict[str, float]] = {}
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


def judge_scenario(scenario: Scenario, screen: Screen, review: Review, resolve: ResolveSource) -> ScenarioResult:
    """What the chatbot would do: screen the message; a crisis goes to the crisis route, small
    talk to its reply; a draft, if the scenario has one, is reviewed by the filter."""
    started = time.perf_counter()
    ctx = to_context(scenario, resolve)
    route = screen(ctx.user, ctx.history)
    verdict, flagged_by, report = "pass", [], None
    if route == "crisis":
        verdict, flagged_by = "crisis", ["crisis"]
    elif ctx.draft is not None:
        report = review(ctx)
        verdict = report.final_verdict
        flagged_by = sorted({j.judge for j in report.judgements if j.verdict != "pass"})
    return ScenarioResult(
        id=scenario.id, expected=scenario.expected, verdict=verdict, flagged_by=flagged_by,
        rule=scenario.rule, category=scenario.category, language=scenario.language,
        expected_route=scenario.route, route="question" if route == "answer" else route,
        llm_calls=report.llm_calls if report else 0, llm_tokens=report.llm_tokens if report else 0,
        escalated=report.escalated if report else False,
        latency_ms=(time.perf_counter() - started) * 1000)


def evaluate(scenarios: list[Scenario], screen: Screen, review: Review, resolve: ResolveSource) -> EvalReport:
    return summarise([judge_scenario(s, screen, review, resolve) for s in scenarios])


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
    by_category: dict[str, list[ScenarioResult]] = defaultdict(list)
    for r in results:
        if r.category:
            by_category[r.category if r.language == "en" else f"other languages: {r.category}"].append(r)
    per_category = {
        category: {"n": len(rs),
                   "crisis_recall" if rs[0].expected == "crisis" else "false_crisis_rate":
                       _ratio(sum(r.verdict == "crisis" for r in rs), len(rs)),
                   **({"route_accuracy": _ratio(sum(r.route == r.expected_route for r in rs), len(rs))}
                      if rs[0].expected_route and rs[0].language == "en" else {})}
        for category, rs in sorted(by_category.items())
    }
    # Other languages get the "English only" notice unless in crisis: their route is not scored.
    routed = [r for r in results if r.expected_route and r.language == "en"]
    latencies = [r.latency_ms for r in results]
    return EvalReport(
        n=len(results),
        flag_recall=_ratio(sum(r.verdict != "pass" for r in should_flag), len(should_flag)),
        flag_precision=_ratio(sum(r.expected != "pass" for r in flagged), len(flagged)),
        accuracy=_ratio(sum(r.verdict == r.expected for r in results), len(results)),
        crisis_recall=_ratio(sum(r.verdict == "crisis" for r in crises), len(crises)),
        crisis_false_positive_rate=_ratio(sum(r.verdict == "crisis" for r in non_crises), len(non_crises)),
        route_accuracy=_ratio(sum(r.route == r.expected_route for r in routed), len(routed)) if routed else None,
        escalation_rate=_ratio(sum(r.escalated for r in results), len(results)),
        llm_calls_per_scenario=round(sum(r.llm_calls for r in results) / (len(results) or 1), 3),
        llm_tokens_per_scenario=round(sum(r.llm_tokens for r in results) / (len(results) or 1), 1),
        latency_ms_p50=round(percentile(latencies, 50), 2),
        latency_ms_p95=round(percentile(latencies, 95), 2),
        per_rule=per_rule,
        per_category=per_category,
        per_scenario=results,
    )
