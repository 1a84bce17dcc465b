"""The filter's promise, as a property: whatever the drafts, verdicts, refiner and faults, the text
it returns is one the cascade passed in that call, and a text the cascade rejected (or could not
judge) even once in that call is never returned, even if a later look would pass it (LLM judges
are not deterministic). The cascade is a stand-in whose successive verdicts on each text
Hypothesis chooses; the refiner is a scripted model; everything else is the real filter."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.models import RoleClient
from app.core.models.scripted import ScriptedChatModel
from app.core.records import Judgement
from judges.cascade import CascadeResult
from judges.filter import CriticalAnalysisFilter
from judges.schema import DraftContext

TEXTS = st.sampled_from(["draft A [S01].", "draft B [S01].", "draft C [S01].", "fallback [S01]."])
OUTCOMES = st.sampled_from(["pass", "warn", "reject", "fail"])  # fail: the top tier errored


class ScriptedCascade:
    def __init__(self, verdicts: dict[str, list[str]]):
        self.verdicts = {text: list(outcomes) for text, outcomes in verdicts.items()}
        self.failed: set[str] = set()  # texts given a reject, or not judged, at least once

    def run(self, ctx: DraftContext, *, tiers=None, deadline=None) -> CascadeResult:
        queue = self.verdicts.get(ctx.draft or "") or ["reject"]
        outcome = queue.pop(0) if len(queue) > 1 else queue[0]
        if outcome in ("reject", "fail"):
            self.failed.add(ctx.draft or "")
        verdict = "reject" if outcome == "fail" else outcome
        judgement = Judgement(judge="any", tier=0, verdict=verdict, error="boom" if outcome == "fail" else None)
        return CascadeResult(verdict=verdict, applied=["any"], judgements=[judgement],
                             final={"any": judgement}, failed_closed=outcome == "fail")


@settings(max_examples=300, deadline=None)
@given(verdicts=st.dictionaries(TEXTS, st.lists(OUTCOMES, min_size=1, max_size=3)), draft=TEXTS, fallback=st.one_of(st.none(), TEXTS),
       rewrites=st.lists(st.one_of(st.none(), TEXTS), max_size=3), rounds=st.integers(0, 3),
       mode=st.sampled_from(["on", "tier0"]))
def test_only_a_text_the_cascade_passed_is_ever_returned(verdicts, draft, fallback, rewrites, rounds, mode):
    # The refiner's replies: a rewrite, or (None) a failed call; past the script it fails loudly.
    replies = [text if text is not None else ConnectionError("refused") for text in rewrites]
    refiner = RoleClient("refiner", "scripted-refiner", ScriptedChatModel(replies))
    cascade = ScriptedCascade(verdicts)
    caf = CriticalAnalysisFilter(cascade, refiner=refiner, max_refine_rounds=rounds)
    outcome = caf.review(DraftContext(user="q", draft=draft), turn=1, mode=mode,
                         fallback=(lambda: fallback) if fallback is not None else None)
    if outcome.text is not None:
        assert outcome.text not in cascade.failed
        assert outcome.report.final_verdict in ("pass", "warn")
    else:
        assert outcome.report.final_verdict == "reject" and outcome.warnings == []
    assert outcome.report.refine_rounds <= (rounds if mode == "on" else 0)
