"""Role and scope: the draft stays an information assistant.

Two layers. Patterns catch the explicit cases: a persona ("as your therapist"), a diagnosis ("you
are relapsing"), therapy work ("let's try a CBT exercise"), speculation about the person's own
case ("if I were you"). A classifier catches the rest: logistic regression over MiniLM sentence
embeddings plus the pattern flags, trained only on sentences of the *train* split of
scenarios/judges (see role_model.py), shipped as an artefact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.core.records import VERDICT_ORDER, Verdict
from app.core.text import split_sentences
from judges.local import patterns
from judges.local.role_patterns import CHECK, KINDS, pattern_hits
from judges.schema import DraftContext, Finding

if TYPE_CHECKING:
    from judges.local.resources import Resources

def check(ctx: DraftContext, res: Resources) -> Finding:
    if not ctx.draft:
        return Finding(check=CHECK, flagged=False, score=0.0, detail="no draft")
    sentences = split_sentences(ctx.draft)
    verdict: Verdict = "pass"
    offending: list[str] = []
    reasons: list[str] = []
    for sentence in sentences:
        for family, hit in pattern_hits(sentence).items():
            if hit:
                offending.append(sentence)
                reasons.append(family)
                if VERDICT_ORDER[KINDS[family]] > VERDICT_ORDER[verdict]:
                    verdict = KINDS[family]
    score = 1.0 if verdict == "reject" else 0.6 if verdict == "warn" else 0.0
    probabilities = res.role_model.predict(sentences)
    if probabilities is not None and len(sentences):
        best = int(probabilities.argmax())
        p = float(probabilities[best])
        model_verdict: Verdict = ("reject" if p >= patterns.threshold(CHECK, "reject_probability")
                                  else "warn" if p >= patterns.threshold(CHECK, "warn_probability") else "pass")
        if model_verdict != "pass":
            offending.append(sentences[best])
            reasons.append(f"classifier {p:.2f}")
            if VERDICT_ORDER[model_verdict] > VERDICT_ORDER[verdict]:
                verdict = model_verdict
        score = max(score, p)
    if verdict == "pass":
        return Finding(check=CHECK, flagged=False, score=round(min(score, 1.0), 3))
    return Finding(check=CHECK, flagged=True, score=round(min(score, 1.0), 3),
                   sentences=list(dict.fromkeys(offending)),
                   detail="acts outside an information assistant's role: " + ", ".join(dict.fromkeys(reasons)),
                   suggested_verdict=verdict)
