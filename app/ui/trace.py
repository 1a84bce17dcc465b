"""The staff trace under an answer: route, sources, the judges by tier with their verdicts and
reasons, warnings, refinement rounds, fallback, latency and model calls."""

from __future__ import annotations

import streamlit as st

from app.core.records import TurnTrace


def show_trace(trace: TurnTrace) -> None:
    with st.expander("Trace (staff)", icon=":material/troubleshoot:"):
        caf = trace.caf
        facts = {
            "route": trace.route,
            "generator": trace.generator or "–",
            "answer card": trace.card or "–",
            "read as": trace.resolved_question or "–",
            "sources given": ", ".join(trace.prompt_sources) or "–",
            "cited": ", ".join(trace.citations) or "–",
            "filter": f"{trace.caf_mode}, final verdict {caf.final_verdict}" if caf else trace.caf_mode,
            "refinement rounds": str(caf.refine_rounds) if caf else "–",
            "fallback used": "yes" if trace.fallback_used else "no",
            "warnings issued": "; ".join(caf.warnings_issued) if caf and caf.warnings_issued else "–",
            "latency": f"{trace.total_ms:.0f} ms",
            "model calls": str(len(trace.model_calls)),  # the filter's calls included
        }
        st.table({"": list(facts), "value": list(facts.values())})
        if caf and caf.judgements:
            st.markdown("**Judges**")
            st.table([{"tier": j.tier, "judge": j.judge, "verdict": j.verdict,
                       "reason": j.error or j.reason or j.rule or ""} for j in caf.judgements])
        if trace.errors:
            st.markdown("**Errors**: " + "; ".join(trace.errors))
