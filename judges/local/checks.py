"""The tier-0 local checks by name, and how the cascade runs them: free, offline, in milliseconds;
each returns a `Finding` (a score and the sentences concerned). The cascade runs the checks its
judges name (`local_checks:` in judges/definitions/*.yaml) and escalates flagged judges to the LLM
tiers. Every check receives the process's `Resources` and keeps no state of its own."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

from app.core.text import split_sentences, strip_citations
from judges.local import (
    citations,
    crisis,
    grounding,
    leakage,
    medication,
    role_scope,
    transparency,
    uncited,
    verification,
)
from judges.local.resources import Resources
from judges.schema import DraftContext, Finding

log = logging.getLogger(__name__)

LocalCheck = Callable[[DraftContext, Resources], Finding]
LOCAL_CHECKS: dict[str, LocalCheck] = {
    "citations": citations.check,
    "grounding": grounding.check,
    "uncited_claims": uncited.check,
    "role_scope": role_scope.check,
    "verification": verification.check,
    "crisis": crisis.check,
    "medication_change": medication.check,
    "leakage": leakage.check,
    "transparency": transparency.check,
}


# Checks that embed sentences: their texts are embedded together, in one batch, before they run.
EMBEDDING_CHECKS = frozenset({"grounding", "uncited_claims", "role_scope", "leakage"})


def _prefetch(ctx: DraftContext, names: list[str], res: Resources) -> None:
    if not ctx.draft or not res.embeddings or not EMBEDDING_CHECKS & set(names):
        return
    sentences = split_sentences(ctx.draft)
    res.encode(sentences + [strip_citations(s) for s in sentences])
    if "grounding" in names:  # the sources' own text: its vectors may be on disk from an earlier process
        res.encode(grounding.source_units(ctx), known=True)


def run_local_checks(ctx: DraftContext, res: Resources, checks: list[str] | None = None) -> list[Finding]:
    """Run the named checks (all when None), in the order given. An unknown name is an error; a
    check that crashes is reported as a flag (tier 0 fails towards escalation, never silently)."""
    names = list(LOCAL_CHECKS) if checks is None else list(checks)
    unknown = [n for n in names if n not in LOCAL_CHECKS]
    if unknown:
        raise KeyError(f"unknown local checks {unknown}; available: {sorted(LOCAL_CHECKS)}")
    # The checks are pure functions of the context: a drift run's audit of a delivered draft, or a
    # second judge naming the same check, gets the finding already made (a failure is not kept),
    # and the texts are embedded only when a check is run.
    key = hashlib.sha256(ctx.model_dump_json().encode()).hexdigest()
    prefetched = False

    def run(name: str) -> Finding:
        nonlocal prefetched
        if not prefetched:
            _prefetch(ctx, names, res)
            prefetched = True
        return LOCAL_CHECKS[name](ctx, res)

    findings = []
    for name in names:
        try:
            findings.append(res.remember(f"tier0.{name}", key, lambda name=name: run(name)))
        except Exception as error:
            log.exception("local check %s failed", name)
            findings.append(Finding(check=name, flagged=True, score=1.0, suggested_verdict="warn",
                                    detail=f"the check failed ({type(error).__name__}: {error}); escalate"))
    return findings

