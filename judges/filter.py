"""The Critical Analysis Filter as the answer graph uses it: judge, then deliver, warn, refine or
fall back. It fails closed: a draft that is rejected, or that no judge could check, is never
delivered; the grounded extractive answer goes out instead."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from app.config import Settings
from app.errors import ModelError
from app.models import ModelCall, RoleClient, model_for
from judges.cascade import Cascade, CascadeResult
from judges.refiner import refine
from judges.schema import CafReport, DraftContext, Turn

if TYPE_CHECKING:
    from app.graph.nodes import AnswerNodes
    from app.graph.state import ChatState, TurnTrace


class CriticalAnalysisFilter:
    def __init__(self, cascade: Cascade, *, refiner: RoleClient | None = None,
                 max_refine_rounds: int = 2, warning_ttl_turns: int = 2):
        self.cascade = cascade
        self.refiner = refiner
        self.max_refine_rounds = max_refine_rounds
        self.warning_ttl_turns = warning_ttl_turns

    @classmethod
    def from_settings(cls, settings: Settings, **clients: RoleClient | None) -> CriticalAnalysisFilter | None:
        """None when the filter is switched off. Pass screener=, judge=, refiner= to override."""
        caf = settings.caf
        if not caf.enabled:
            return None

        def client(role: str) -> RoleClient | None:
            return clients[role] if role in clients else model_for(role, settings)

        cascade = Cascade(screener=client("screener"), judge=client("judge"),
                          tiers=caf.tiers, paper_mode=caf.paper_mode)
        return cls(cascade, refiner=client("refiner"), max_refine_rounds=caf.max_refine_rounds,
                   warning_ttl_turns=caf.warning_ttl_turns)

    def review(self, state: ChatState, nodes: AnswerNodes, trace: TurnTrace) -> dict[str, Any]:
        from app.graph.state import PendingWarning

        started = time.perf_counter()
        ctx = draft_context(state, nodes)
        report = CafReport()
        answer: str | None = None
        for round_ in range(self.max_refine_rounds + 1):
            result = self.cascade.run(ctx)
            _add(report, result, trace)
            if result.failed_closed:
                trace.errors.append("a judge at the top tier failed: the draft is not delivered")
                break
            if result.verdict in ("pass", "warn"):
                answer = ctx.draft
                break
            if self.refiner is None or round_ == self.max_refine_rounds:
                break
            rejected = [j for j in result.final.values() if j.verdict == "reject"]
            try:
                new_draft, call = refine(self.refiner, ctx, rejected)
            except ModelError as error:
                if error.call:
                    trace.model_calls.append(error.call)
                trace.errors.append(str(error))
                break
            trace.model_calls.append(call)
            report.refine_rounds += 1
            ctx = ctx.model_copy(update={"draft": new_draft})

        warnings = list(state.get("warnings") or [])
        if answer is None:
            answer = nodes.extractive_answer(state)
            report.fallback_used = trace.fallback_used = True
            report.final_verdict = "reject"
        else:
            report.final_verdict = result.verdict
            for judgement in result.final.values():
                if judgement.verdict == "warn":
                    message = judgement.reason or f"the {judgement.judge} judge raised a concern"
                    warnings.append(PendingWarning(
                        judge=judgement.judge, rule=judgement.rule or judgement.judge, message=message,
                        issued_turn=state["turn"], expires_after_turn=state["turn"] + self.warning_ttl_turns))
                    report.warnings_issued.append(message)
        report.latency_ms = (time.perf_counter() - started) * 1000
        trace.caf = report
        return {"answer": answer, "trace": trace, "warnings": warnings}


def draft_context(state: ChatState, nodes: AnswerNodes) -> DraftContext:
    from langchain_core.messages import HumanMessage

    sources = [d for sid in state.get("prompt_source_ids") or [] if (d := nodes.services.source_text(sid))]
    history = [Turn(role="user" if isinstance(m, HumanMessage) else "assistant", content=str(m.content))
               for m in state.get("messages", [])[-6:]]
    return DraftContext(user=state["screen"].text, draft=state["draft"], sources=sources, history=history)


def _add(report: CafReport, result: CascadeResult, trace: TurnTrace) -> None:
    for j in result.judgements:
        if j.tier > 0:
            trace.model_calls.append(ModelCall(
                role="screener" if j.tier == 1 else "judge", model=j.model, purpose=f"tier{j.tier}:{j.judge}",
                input_tokens=j.input_tokens, output_tokens=j.output_tokens, latency_ms=j.latency_ms,
                ok=j.error is None, error=j.error))
    report.judges_applied = result.applied
    report.judgements.extend(result.judgements)
    report.escalated = report.escalated or result.escalated
    report.llm_calls += result.llm_calls
    report.llm_tokens += result.llm_tokens
