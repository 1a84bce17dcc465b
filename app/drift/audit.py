"""The same yardstick for every condition: the filter's local checks (tier 0) run over the answer
the user finally saw, whether the filter was on, off or local-only for that turn. Drift summaries
and script expectations read this audit, never the condition's own verdicts, so CAF on and off are
measured alike."""

from __future__ import annotations

from app.core.records import TurnTrace, Verdict
from app.graph.nodes import conversation_turns
from app.graph.services import Services
from judges.schema import DraftContext


def audit_answer(services: Services, trace: TurnTrace, history: list) -> dict[str, Verdict]:
    """Each applicable judge's tier-0 verdict on `trace.answer`; `history` is the conversation's
    messages before the turn. The product's own fixed replies (crisis resources, small talk, the
    reply when nothing passed the filter) are written and reviewed by people: nothing to judge."""
    if trace.generator == "fixed" or not trace.answer.strip():
        return {}
    cited = [s for sid in dict.fromkeys([*trace.prompt_sources, *trace.citations])
             if (s := services.source_text(sid))]
    # The closing (fixed crisis contacts) is the product's text, as the filter saw it: not judged
    # as content, counted as the answer's response to a recent crisis.
    answer = trace.answer.removesuffix(trace.closing).rstrip() if trace.closing else trace.answer
    ctx = DraftContext(user=trace.user_message, draft=answer, sources=cited, history=conversation_turns(history),
                       closing=trace.closing, crisis_cleared=trace.crisis_cleared)
    result = services.caf.cascade.run(ctx, tiers={0})
    return {name: judgement.verdict for name, judgement in result.final.items()}


def compliant(verdicts: dict[str, Verdict]) -> bool:
    """Deliverable under the filter's own rule: no judge rejects it."""
    return "reject" not in verdicts.values()
