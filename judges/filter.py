"""The Critical Analysis Filter: judge a draft, then pass, warn, refine or fall back, and say so in
a typed `FilterOutcome`. The caller (the answer graph) applies the outcome; the filter knows
nothing of the graph.

It fails closed: `outcome.text` is always a text the cascade passed (or warned on) in this call.
A rejected draft, a draft no judge could check, and a fallback identical to a rejected draft are
never returned; when nothing passes, `text` is None and the caller sends a fixed reply.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from app.core.config import Settings
from app.core.errors import ModelError
from app.core.models import Deadline, RoleClient, model_for
from app.core.records import CafMode, CafReport, Judgement, ModelCall, PendingWarning
from judges.cascade import Cascade, CascadeResult
from judges.local.resources import Resources
from judges.refiner import refine
from judges.schema import DraftContext, FilterOutcome


class CriticalAnalysisFilter:
    def __init__(self, cascade: Cascade, *, refiner: RoleClient | None = None,
                 max_refine_rounds: int = 2, warning_ttl_turns: int = 2):
        self.cascade = cascade
        self.refiner = refiner
        self.max_refine_rounds = max_refine_rounds
        self.warning_ttl_turns = warning_ttl_turns

    @classmethod
    def from_settings(cls, settings: Settings, resources: Resources,
                      **clients: RoleClient | None) -> CriticalAnalysisFilter:
        """Pass screener=, judge=, refiner= to override a role's client."""
        caf = settings.caf

        def client(role: str) -> RoleClient | None:
            return clients[role] if role in clients else model_for(role, settings)

        cascade = Cascade(resources=resources, screener=client("screener"), judge=client("judge"),
                          tiers=caf.tiers, paper_mode=caf.paper_mode)
        return cls(cascade, refiner=client("refiner"), max_refine_rounds=caf.max_refine_rounds,
                   warning_ttl_turns=caf.warning_ttl_turns)

    def review(self, ctx: DraftContext, *, turn: int, mode: CafMode = "on",
               fallback: Callable[[], str | None] | None = None, deadline: Deadline | None = None
               ) -> FilterOutcome:
        """Judge `ctx.draft` (refining a rejected one when a refiner is configured); if nothing
        passes, judge the text `fallback` makes (composed only then: most drafts pass).
        `mode="tier0"` runs the local checks alone, with no model. `deadline` bounds every model
        call; once it is spent no judge can pass a flagged text, so only what tier 0 passes
        outright can still be delivered."""
        if mode == "off":
            raise ValueError("review() judges drafts; with the filter off the caller delivers as is")
        started = time.perf_counter()
        tiers = {0} if mode == "tier0" else None
        refiner = self.refiner if mode == "on" else None
        report, calls = CafReport(mode=mode), []
        rejected: set[str] = set()  # texts rejected in this call: never judged, nor delivered, again
        last = self._judge(ctx, tiers, report, calls, deadline)
        if not last.passed:
            rejected.add(_normal(ctx.draft))
        rounds = 0
        while _normal(ctx.draft) in rejected and refiner is not None and rounds < self.max_refine_rounds \
                and not last.failed_closed:
            failing = [j for j in last.final.values() if j.verdict == "reject"]
            try:
                new_draft, call = refine(refiner, ctx, failing, deadline)
            except ModelError as error:
                calls.extend([error.call] if error.call else [])
                report.errors.append(str(error))
                break
            calls.append(call)
            rounds += 1
            ctx = ctx.model_copy(update={"draft": new_draft})
            if _normal(new_draft) in rejected:
                report.errors.append("the refiner repeated a rejected draft")
                continue
            last = self._judge(ctx, tiers, report, calls, deadline)
            if not last.passed:
                rejected.add(_normal(new_draft))
        report.refine_rounds = rounds

        text = ctx.draft if _normal(ctx.draft) not in rejected else None
        if text is None:
            if last.failed_closed:
                report.errors.append("a judge at the top tier failed: the draft is not delivered")
            spare = fallback() if fallback else None
            if spare and _normal(spare) not in rejected:
                last = self._judge(ctx.model_copy(update={"draft": spare}), tiers, report, calls, deadline)
                text = spare if last.passed else None
            report.fallback_used = True
        report.final_verdict = last.verdict if text is not None else "reject"
        warnings = self._warnings(last, turn) if text is not None else []
        report.warnings_issued = [w.message for w in warnings]
        report.model_calls = calls
        report.latency_ms = (time.perf_counter() - started) * 1000
        return FilterOutcome(text=text, report=report, warnings=warnings)

    def _judge(self, ctx: DraftContext, tiers: set[int] | None, report: CafReport,
               calls: list[ModelCall], deadline: Deadline | None) -> CascadeResult:
        result = self.cascade.run(ctx, tiers=tiers, deadline=deadline)
        calls.extend(_calls_of(result.judgements))
        report.judges_applied = result.applied
        report.judgements.extend(result.judgements)
        report.escalated = report.escalated or result.escalated
        report.llm_calls += result.llm_calls
        report.llm_tokens += result.llm_tokens
        return result

    def _warnings(self, result: CascadeResult, turn: int) -> list[PendingWarning]:
        return [PendingWarning(judge=j.judge, rule=j.rule or j.judge,
                               message=j.reason or f"the {j.judge} judge raised a concern",
                               issued_turn=turn, expires_after_turn=turn + self.warning_ttl_turns)
                for j in result.final.values() if j.verdict == "warn"]


def _normal(text: str | None) -> str:
    return " ".join((text or "").split())


def _calls_of(judgements: list[Judgement]) -> list[ModelCall]:
    """The LLM judges' calls, as model-call records for the turn's cost accounting."""
    return [ModelCall(role="screener" if j.tier == 1 else "judge", model=j.model, purpose=f"tier{j.tier}:{j.judge}",
                      input_tokens=j.input_tokens, output_tokens=j.output_tokens, latency_ms=j.latency_ms,
                      ok=j.error is None, error=j.error)
            for j in judgements if j.tier > 0]
