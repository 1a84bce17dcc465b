"""Tier-0 local checks: free, offline, in milliseconds; each returns a score and the sentences
concerned as a `Finding`. The cascade runs the checks its judges name (`local_checks:` in
judges/definitions/*.yaml) and escalates flagged judges to the LLM tiers.

Patterns, word lists and thresholds are data, in patterns.yaml. Checks that use embeddings share
the process-wide embedder of app.retrieval and fall back to their lexical layers without it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from judges.local import (
    citations,
    crisis,
    grounding,
    leakage,
    medication,
    role_scope,
    transparency,
    uncited,
    vectors,
    verification,
)
from judges.local.text import split_sentences, strip_citations
from judges.schema import DraftContext, Finding, SourceText

log = logging.getLogger(__name__)

LOCAL_CHECKS: dict[str, Callable[[DraftContext], Finding]] = {
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


def _prefetch(ctx: DraftContext, names: list[str]) -> None:
    if not ctx.draft or not vectors.enabled() or not EMBEDDING_CHECKS & set(names):
        return
    sentences = split_sentences(ctx.draft)
    texts = sentences + [strip_citations(s) for s in sentences]
    if "grounding" in names:
        texts += grounding.source_units(ctx)
    vectors.encode(texts)


def run_local_checks(ctx: DraftContext, checks: list[str] | None = None) -> list[Finding]:
    """Run the named checks (all when None), in the order given. An unknown name is an error; a
    check that crashes is reported as a flag (tier 0 fails towards escalation, never silently)."""
    names = list(LOCAL_CHECKS) if checks is None else list(checks)
    unknown = [n for n in names if n not in LOCAL_CHECKS]
    if unknown:
        raise KeyError(f"unknown local checks {unknown}; available: {sorted(LOCAL_CHECKS)}")
    _prefetch(ctx, names)
    findings = []
    for name in names:
        try:
            findings.append(LOCAL_CHECKS[name](ctx))
        except Exception as error:
            log.exception("local check %s failed", name)
            findings.append(Finding(check=name, flagged=True, score=1.0, suggested_verdict="warn",
                                    detail=f"the check failed ({type(error).__name__}: {error}); escalate"))
    return findings


def configure(cache_dir: Path | None = None) -> None:
    """Where the learned checks (role scope, crisis) keep their fitted weights between runs."""
    from judges.local import crisis_model, role_model

    role_model.configure(cache_dir=cache_dir)
    crisis_model.configure(cache_dir=cache_dir)


def warm_up(sources: Iterable[SourceText] = ()) -> float:
    """Load the embedder, embed the prototype phrases and the given sources, and train the role
    classifier, so that the first turn is as fast as the others. Returns the seconds it took."""
    import time

    from judges.local import crisis_model, patterns, role_model

    started = time.perf_counter()
    if vectors.enabled():
        for section, key in (("crisis", "prototypes"), ("crisis", "safe_prototypes"),
                             ("uncited", "allowed_prototypes")):
            vectors.prototypes(patterns.section(section)[key])
        vectors.encode([u for s in sources for u in grounding.units(s.text)])
        role_model.model()
        crisis_model.model()
    return time.perf_counter() - started


__all__ = ["LOCAL_CHECKS", "Finding", "configure", "run_local_checks", "warm_up"]
