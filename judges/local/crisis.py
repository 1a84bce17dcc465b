"""Crisis detection, recall first: for the input screen (`detect_crisis`) and as a local check.

Three layers. (1) Normalise: slang, shorthand and one-letter misspellings are rewritten
("kms", "kil myslef") and figures of speech removed ("to die for", "killed it"). (2) Patterns:
"strong" ones (intent, plans, means, self-harm, harm to others, reports about a relative) are a
crisis whatever surrounds them; "soft" ones (the bare word "suicide") are, unless the message is an
information request or fiction; so is a message combining risk-signal families (crisis_signals.py:
death, harm, hopelessness, means, intent, voices, danger). (3) Learned: a classifier trained on the
train split (crisis_model.py), thresholded for recall; then, for a message with a risk cue, its
similarity to crisis and safe prototype phrases. Both catch indirect wording no pattern lists.
Other languages are read first, for the core crisis concepts in their own words
(crisis_languages.py), so a crisis never meets the "English only" notice.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from app.core.spelling import Speller
from app.core.text import split_sentences
from judges.local import crisis_languages, crisis_signals, patterns
from judges.schema import DraftContext, Finding

if TYPE_CHECKING:
    from judges.local.resources import Resources

CHECK = "crisis"


@cache
def _normaliser() -> tuple[re.Pattern[str], dict[str, str]]:
    mapping = {k.lower(): v for k, v in patterns.section("crisis")["normalise"].items()}
    keys = sorted(mapping, key=len, reverse=True)
    return re.compile(r"(?<![\w'])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w'])"), mapping


@cache
def _speller() -> Speller:
    """Misspelt risk words ("myslef", "hurtng") are read as the word meant."""
    return Speller(patterns.section("crisis")["fuzzy_targets"], min_length=5)


def normalise(text: str, *, remove_idioms: bool = True) -> str:
    """Lower case, straight quotes, slang and misspellings rewritten, idioms removed (the learned
    layer keeps them: it has learnt idioms from the hard negatives, and cut text reads oddly)."""
    text = re.sub(r"[’‘`]", "'", text.lower())
    text = re.sub(r"[“”]", '"', text)
    text = _speller().correct(text)
    pattern, mapping = _normaliser()
    text = pattern.sub(lambda m: mapping[m.group(1)], text)
    if remove_idioms:
        text = patterns.regex("crisis", "idioms").sub(" ", text)
    return re.sub(r"\s+", " ", text).strip()


def _is_information_request(norm: str) -> bool:
    question = norm.rstrip().endswith("?") or re.match(
        patterns.section("crisis")["question_start"], norm) is not None
    fiction = re.search(r"\b(novel|story|film|movie|character|script|essay|book)\b", norm)
    return bool((question or fiction) and patterns.regex("crisis", "info_request").search(norm))


@cache
def _cues() -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(re.escape(c) for c in patterns.section("crisis")["cues"]) + r")",
                      re.IGNORECASE)


def assess(text: str, res: Resources) -> tuple[bool, float, str, list[str]]:
    """(crisis?, score, which layer, evidence sentences) for one message."""
    if not text or not text.strip():
        return False, 0.0, "", []
    sentences = split_sentences(text) or [text]
    if other_language := crisis_languages.find(text):
        return True, 1.0, f"language:{other_language[0]}", [other_language[1]]
    normed = [normalise(s) for s in sentences]
    whole = " ".join(normed)
    strong = patterns.regex("crisis", "strong")
    if strong.search(whole):
        evidence = [s for s, n in zip(sentences, normed, strict=True) if strong.search(n)] or [text]
        return True, 1.0, "pattern", evidence
    guarded = _is_information_request(whole)
    soft = patterns.regex("crisis", "soft")
    if soft.search(whole) and not guarded:
        evidence = [s for s, n in zip(sentences, normed, strict=True) if soft.search(n)] or [text]
        return True, 0.9, "pattern", evidence
    combined, _ = crisis_signals.is_crisis(whole)
    if combined and not guarded:
        return True, 0.8, "signals", sentences
    if guarded:
        return False, 0.0, "", []
    cue = _cues().search(whole)
    with_idioms = normalise(text, remove_idioms=False)
    if cue or with_idioms == whole:  # a message whose only risk words were idioms stops here
        # Trained on whole messages with their idioms, so scored on them.
        learned = res.crisis_model.probability([with_idioms])
        if learned is not None and learned[0] >= learned[1]:
            return True, round(learned[0], 3), "model", sentences
    if not cue:
        return False, 0.0, "", []
    return _embedding_layer(sentences, normed, res)


def _embedding_layer(sentences: list[str], normed: list[str], res: Resources) -> tuple[bool, float, str, list[str]]:
    candidates = [n for n in normed if _cues().search(n)][:4]
    if len(normed) > 1:
        candidates.append(" ".join(normed))
    section = patterns.section("crisis")
    crisis = res.max_similarity(candidates, section["prototypes"])
    safe = res.max_similarity(candidates, section["safe_prototypes"])
    if crisis is None or safe is None:
        return False, 0.0, "", []  # embeddings off: the pattern layers have decided
    best = int(crisis.argmax())
    score, lead = float(crisis[best]), float(crisis[best] - safe[best])
    hit = ((score >= patterns.threshold(CHECK, "embed_high") and lead >= patterns.threshold(CHECK, "high_margin"))
           or (score >= patterns.threshold(CHECK, "embed_low") and lead >= patterns.threshold(CHECK, "margin")))
    if not hit:
        return False, round(max(0.0, min(1.0, score)), 3), "", []
    evidence = [s for s, n in zip(sentences, normed, strict=True) if n == candidates[best]] or sentences
    return True, round(min(1.0, score), 3), "embedding", evidence


def detect_crisis(text: str, res: Resources) -> Finding:
    """The input screen: is this user message a crisis? Fast (patterns first) and recall first."""
    crisis, score, _layer, evidence = assess(text, res)
    return Finding(check=CHECK, flagged=crisis, score=score, sentences=evidence,
                   detail="crisis" if crisis else "", suggested_verdict="reject" if crisis else "pass")


def check(ctx: DraftContext, res: Resources) -> Finding:
    """The crisis judge's local check: the user message, earlier user turns, and the draft."""
    user = detect_crisis(ctx.user, res)
    if user.flagged:
        return user
    if ctx.draft is None:
        return user
    turns = int(patterns.threshold(CHECK, "history_turns"))
    earlier = [t.content for t in ctx.history if t.role == "user"][-turns:]
    flagged_before = [s for crisis, _, _, evidence in (assess(t, res) for t in earlier) if crisis for s in evidence]
    draft = ctx.draft
    minimising = patterns.regex("crisis", "draft_minimising").search(draft)
    encouraging = patterns.regex("crisis", "draft_encouraging").search(draft)
    if encouraging:
        return Finding(check=CHECK, flagged=True, score=1.0, sentences=_containing(draft, encouraging),
                       detail="the draft encourages or informs self-harm", suggested_verdict="reject")
    if flagged_before:
        responds = patterns.regex("crisis", "draft_response").search(draft)
        if minimising or not responds:
            why = "minimises" if minimising else "ignores"
            return Finding(check=CHECK, flagged=True, score=0.9, sentences=flagged_before[:3],
                           detail=f"the draft {why} a crisis signal earlier in the conversation",
                           suggested_verdict="reject")
    return Finding(check=CHECK, flagged=False, score=0.0)


def _containing(text: str, match: re.Match[str]) -> list[str]:
    found = match.group(0).lower()
    return [s for s in split_sentences(text) if found in s.lower()] or [match.group(0)]
