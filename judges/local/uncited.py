"""Uncited claims: sentences without a citation that state facts.

Sentences of the kinds that need no source pass: questions, empathy and greetings, reminders to
check with the care team, statements about what the sources cover, and basic facts marked as
general information "not from the sources". Any other uncited sentence is a claim: a warning when
it is basic, a rejection when it is a specific medical claim (numbers, medicines, doses, risks,
outcomes); a specific claim stays a rejection even when marked as general information.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.core.text import citations_in, split_sentences, words
from judges.local import patterns
from judges.local.kinds import kind
from judges.schema import DraftContext, Finding

if TYPE_CHECKING:
    from judges.local.resources import Resources

CHECK = "uncited_claims"


def is_specific(sentence: str) -> bool:
    return bool(patterns.regex("uncited", "specific").search(sentence))


def uncited_claims(draft: str, res: Resources) -> list[tuple[str, bool]]:
    """(sentence, is it a specific medical claim?) for each uncited claim in the draft."""
    found: list[tuple[str, bool]] = []
    candidates: list[str] = []
    for sentence in split_sentences(draft):
        if citations_in(sentence) or len(words(sentence)) < 3:
            continue
        sentence_kind = kind(sentence)
        if sentence_kind == "marker":
            if is_specific(sentence):
                found.append((sentence, True))
        elif sentence_kind == "claim":
            candidates.append(sentence)
    # Basic-sounding claims close to an allowed kind (in other words) get the benefit of the doubt.
    basic = [s for s in candidates if not is_specific(s)]
    allowed = res.max_similarity(basic, patterns.section("uncited")["allowed_prototypes"])
    threshold = patterns.threshold("uncited", "allowed_similarity")
    excused = {s for s, sim in zip(basic, [] if allowed is None else allowed, strict=False) if sim >= threshold}
    found += [(s, is_specific(s)) for s in candidates if s not in excused]
    return found


def check(ctx: DraftContext, res: Resources) -> Finding:
    if not ctx.draft:
        return Finding(check=CHECK, flagged=False, score=0.0, detail="no draft")
    claims = uncited_claims(ctx.draft, res)
    if not claims:
        return Finding(check=CHECK, flagged=False, score=0.0)
    specific = [s for s, is_spec in claims if is_spec]
    detail = (f"{len(specific)} uncited specific medical claim(s)" if specific
              else f"{len(claims)} uncited statement(s) not marked as general information")
    return Finding(check=CHECK, flagged=True, score=1.0 if specific else 0.6,
                   sentences=[s for s, _ in claims], detail=detail,
                   suggested_verdict="reject" if specific else "warn", floor="warn" if specific else "pass")
