"""The escalation policy: tier 0 (local checks) → tier 1 (screener LLM) → tier 2 (judge LLM).

A judge reaches the next tier only if the tier below flagged it, so benign drafts cost no model
call. A judge that errors, times out or answers malformed output counts as a flag and escalates;
if the top tier fails, the draft is not trusted (`failed_closed`). "Paper mode" sends every
applicable judge to the screener, as the original design did, for comparison.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage

from app.core.errors import ModelError
from app.core.models import Deadline, RoleClient, call_structured
from app.core.records import VERDICT_ORDER, Judgement, ModelCall, Verdict
from judges.local.checks import run_local_checks
from judges.local.resources import Resources
from judges.registry import JudgeDefinition, load_judges
from judges.rules import load_rules
from judges.schema import DraftContext, Finding, JudgeVerdict
from judges.verdicts import problem_with

PROMPTS = Path(__file__).with_name("prompts")


@cache
def _template(name: str) -> str:
    return (PROMPTS / name).read_text(encoding="utf-8")


def strongest(verdicts: Iterable[Verdict]) -> Verdict:
    return max(verdicts, key=VERDICT_ORDER.__getitem__, default="pass")


def capped(verdict: Verdict, cap: Verdict) -> Verdict:
    return verdict if VERDICT_ORDER[verdict] <= VERDICT_ORDER[cap] else cap


@dataclass
class CascadeResult:
    verdict: Verdict
    applied: list[str]
    judgements: list[Judgement] = field(default_factory=list)
    final: dict[str, Judgement] = field(default_factory=dict)  # each judge's last word
    floors: dict[str, Judgement] = field(default_factory=dict)  # the least each judge may end on
    escalated: bool = False
    failed_closed: bool = False

    @property
    def llm_calls(self) -> int:
        return sum(1 for j in self.judgements if j.tier > 0)

    @property
    def llm_tokens(self) -> int:
        return sum(j.input_tokens + j.output_tokens for j in self.judgements)

    @property
    def passed(self) -> bool:
        """Deliverable: every judge's last word is pass or warn, and the top tier did not fail."""
        return self.verdict != "reject" and not self.failed_closed

    @property
    def flagged_by(self) -> list[str]:
        return [name for name, j in self.final.items() if j.verdict != "pass"]


class Cascade:
    def __init__(self, judges: Iterable[JudgeDefinition] | None = None, *, resources: Resources,
                 screener: RoleClient | None = None, judge: RoleClient | None = None,
                 tiers: Iterable[int] = (0, 1, 2), paper_mode: bool = False):
        self.judges = tuple(judges) if judges is not None else load_judges()
        self.resources = resources
        self.tiers = set(tiers)
        self.llm_tiers = {1: screener, 2: judge}
        self.paper_mode = paper_mode

    def run(self, ctx: DraftContext, *, tiers: Iterable[int] | None = None,
            deadline: Deadline | None = None) -> CascadeResult:
        """Judge one draft. `tiers` narrows the configured tiers for this call only; `deadline`
        bounds its model calls (a judge that runs out of time failed, and counts as a flag)."""
        active = self.tiers if tiers is None else self.tiers & set(tiers)
        applied = [j for j in self.judges if j.applies_to(ctx)]
        result = CascadeResult(verdict="pass", applied=[j.name for j in applied])
        pending = applied
        if 0 in active:
            pending = self._tier0(ctx, applied, result)
        if self.paper_mode:
            pending = applied
        for tier in (1, 2):
            client = self.llm_tiers[tier]
            if tier not in active or client is None or not pending:
                continue
            result.escalated = True
            pending, errors = self._llm_tier(tier, client, ctx, pending, result, deadline)
            # Only the highest tier that ran has the last word: its failures fail closed.
            result.failed_closed = errors
        for name, floor in result.floors.items():  # strong tier-0 findings bound any LLM's opinion
            if VERDICT_ORDER[result.final[name].verdict] < VERDICT_ORDER[floor.verdict]:
                result.final[name] = floor
        result.verdict = strongest(j.verdict for j in result.final.values())
        return result

    def _tier0(self, ctx: DraftContext, applied: list[JudgeDefinition], result: CascadeResult) -> list[JudgeDefinition]:
        started = time.perf_counter()
        needed = sorted({c for j in applied for c in j.local_checks})
        findings = {f.check: f for f in run_local_checks(ctx, self.resources, needed)}
        per_judge_ms = (time.perf_counter() - started) * 1000 / max(1, len(applied))
        flagged = []
        for judge in applied:
            found = [findings[c] for c in judge.local_checks if c in findings]
            judgement = _from_findings(judge, found, per_judge_ms)
            result.judgements.append(judgement)
            result.final[judge.name] = judgement
            floor = capped(strongest(f.floor for f in found if f.flagged), judgement.verdict)
            if floor != "pass":
                result.floors[judge.name] = judgement.model_copy(update={"verdict": floor})
            if judgement.verdict != "pass":
                flagged.append(judge)
        return flagged

    def _llm_tier(self, tier: int, client: RoleClient, ctx: DraftContext, judges: list[JudgeDefinition],
                  result: CascadeResult, deadline: Deadline | None) -> tuple[list[JudgeDefinition], bool]:
        with ThreadPoolExecutor(max_workers=len(judges), thread_name_prefix=f"tier{tier}") as pool:
            judgements = list(pool.map(lambda j: ask_llm_judge(tier, client, j, ctx, deadline), judges))
        for judge, judgement in zip(judges, judgements, strict=True):
            result.judgements.append(judgement)
            result.final[judge.name] = judgement
        escalate = [j for j, v in zip(judges, judgements, strict=True) if v.verdict != "pass" or v.error]
        return escalate, any(v.error for v in judgements)


def _from_findings(judge: JudgeDefinition, findings: list[Finding], latency_ms: float) -> Judgement:
    hits = [f for f in findings if f.flagged]
    if not hits:
        return Judgement(judge=judge.name, tier=0, verdict="pass", latency_ms=latency_ms,
                         score=max((f.score for f in findings), default=0.0))
    # A flag whose check suggests "pass" still counts: tier 0 leans safe.
    verdict = strongest(f.suggested_verdict for f in hits)
    verdict = capped("warn" if verdict == "pass" else verdict, judge.severity.max_verdict)
    return Judgement(
        judge=judge.name, tier=0, verdict=verdict, rule=judge.rules[0],
        reason="; ".join(f"{f.check}: {f.detail}" for f in hits if f.detail)[:500],
        offending=[s for f in hits for s in f.sentences][:5],
        score=max(f.score for f in hits), latency_ms=latency_ms,
    )


def judge_messages(tier: int, judge: JudgeDefinition, ctx: DraftContext) -> list:
    rules = load_rules()
    rule_text = "\n".join(f"- {r.id}: {r.text.strip()} Severity: {r.severity.strip()}"
                          for r in rules.rules if r.id in judge.rules)
    task = judge.screening_prompt if tier == 1 else judge.confirmation_prompt
    system = _template("judge.md").format(judge=judge.name, description=judge.description,
                                          rules=rule_text, task=task.strip())
    return [SystemMessage(system), HumanMessage(judged_material(ctx))]


def judged_material(ctx: DraftContext) -> str:
    history = "\n".join(f"{t.role}: {t.content}" for t in ctx.history[-6:]) or "(none)"
    sources = "\n\n".join(f"[{s.id}] {s.title}\n{s.text}" for s in ctx.sources) or "(none)"
    return _template("judged_material.md").format(
        history=history, user=ctx.user, sources=sources, draft=ctx.draft or "(no draft: judge the user's message)")


def ask_llm_judge(tier: int, client: RoleClient, judge: JudgeDefinition, ctx: DraftContext,
                  deadline: Deadline | None = None) -> Judgement:
    """One LLM judge call. Any failure, an unusable verdict included, is returned as a flagged
    judgement, never raised."""
    try:
        verdict, call = call_structured(client, JudgeVerdict, judge_messages(tier, judge, ctx),
                                        purpose=f"tier{tier}:{judge.name}", deadline=deadline)
    except ModelError as error:
        return _failed(tier, client, judge, error.reason, error.call)
    if problem := problem_with(verdict, ctx):
        call = call.model_copy(update={"ok": False, "error": f"malformed verdict: {problem}"})
        return _failed(tier, client, judge, call.error, call)
    return Judgement(
        judge=judge.name, tier=tier, model=client.model_name,
        verdict=capped(verdict.verdict, judge.severity.max_verdict),
        rule=verdict.rule or (judge.rules[0] if verdict.verdict != "pass" else ""),
        reason=verdict.reason, offending=verdict.offending, suggested_fix=verdict.suggested_fix,
        latency_ms=call.latency_ms, input_tokens=call.input_tokens, output_tokens=call.output_tokens,
    )


def _failed(tier: int, client: RoleClient, judge: JudgeDefinition, error: str | None,
            call: ModelCall | None) -> Judgement:
    return Judgement(judge=judge.name, tier=tier, model=client.model_name,
                     verdict=capped("reject", judge.severity.max_verdict),
                     rule=judge.rules[0], reason="the judge failed; treated as a flag",
                     error=error or "unknown error", latency_ms=call.latency_ms if call else 0.0,
                     input_tokens=call.input_tokens if call else 0,
                     output_tokens=call.output_tokens if call else 0)
