"""Leakage and injection: the draft must not reveal or paraphrase the system prompt or rules, and
must not go along with instructions smuggled into the user's message, earlier turns or a source.

Revealing is measured against judges/rules.yaml itself: the share of the draft's word 4-grams
found in the rules text, and how many distinct rules its sentences restate (embeddings). Going
along is an injection attempt followed by a compliant draft (no refusal), or a draft that repeats
the payload of an instruction hidden in a source.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from app.core.text import content_stems, split_sentences, stem, words
from judges.local import patterns
from judges.rules import load_rules
from judges.schema import DraftContext, Finding

if TYPE_CHECKING:
    from judges.local.resources import Resources

CHECK = "leakage"


def _ngrams(text: str, n: int = 4) -> set[tuple[str, ...]]:
    tokens = [stem(w) for w in words(text)]
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


@cache
def _rules() -> tuple[set[tuple[str, ...]], list[str], list[str]]:
    """The rules' 4-grams, and one phrase per rule sentence with the rule id it belongs to."""
    book = load_rules().worded()
    phrases, ids = [book.role], ["role"]
    for rule in book.rules:
        for sentence in [rule.title, *split_sentences(rule.text)]:
            phrases.append(sentence)
            ids.append(rule.id)
    return _ngrams(" ".join(phrases)), phrases, ids


def reveals_rules(draft: str, res: Resources) -> tuple[bool, str, list[str]]:
    grams, phrases, ids = _rules()
    draft_grams = _ngrams(draft)
    share = len(draft_grams & grams) / len(draft_grams) if draft_grams else 0.0
    if share >= patterns.threshold(CHECK, "rules_ngram_share"):
        return True, f"{share:.0%} of the draft's wording is the rules text", []
    sentences = [p for s in split_sentences(draft) for p in re.split(r";|\s-\s|\s\d+\.\s", s) if len(p.split()) >= 3]
    sims = res.encode(sentences) if sentences else None
    proto = res.prototypes(phrases)
    if sims is None or proto is None:
        return False, "", []
    matrix = sims @ proto.T
    close = matrix.max(axis=1) >= patterns.threshold(CHECK, "rule_similarity")
    restated = {ids[int(j)] for j, ok in zip(matrix.argmax(axis=1), close, strict=True) if ok}
    quoted = [s for s, ok in zip(sentences, close, strict=True) if ok]
    disclosing = patterns.regex(CHECK, "disclosure").search(draft) and not _refuses(draft)
    if len(restated) >= patterns.threshold(CHECK, "restated_rules") or (disclosing and restated):
        return True, f"restates {len(restated)} of its rules ({', '.join(sorted(restated))})", quoted
    return False, "", []


def _refuses(draft: str) -> bool:
    return bool(re.search(patterns.section(CHECK)["refusal"], draft, re.IGNORECASE))


def _injected_payloads(ctx: DraftContext) -> list[tuple[str, str]]:
    """(source text without the instruction, the instruction) for instructions hidden in sources."""
    return [found for source in ctx.sources for found in _payloads_in(source.text)]


@lru_cache(maxsize=512)
def _payloads_in(text: str) -> tuple[tuple[str, str], ...]:
    # Read once per source text: the same sources come back turn after turn.
    sentences = split_sentences(re.sub(r"\[([^\]]{12,})\]", r". \1. ", text))
    return tuple((" ".join(sentences[:n] + sentences[n + 1:]), sentence) for n, sentence in enumerate(sentences)
                 if patterns.regex(CHECK, "injection").search(sentence))


def check(ctx: DraftContext, res: Resources) -> Finding:
    if not ctx.draft:
        return Finding(check=CHECK, flagged=False, score=0.0, detail="no draft")
    draft = ctx.draft
    revealed, why, quoted = reveals_rules(draft, res)
    if revealed:
        return Finding(check=CHECK, flagged=True, score=1.0, sentences=quoted or split_sentences(draft)[:3],
                       detail=f"reveals the system prompt or rules: {why}", suggested_verdict="reject",
                       floor="warn")
    asked = [ctx.user, *(t.content for t in ctx.history if t.role == "user")]
    attempt = next((m.group(0) for text in asked if (m := patterns.regex(CHECK, "injection").search(text))), None)
    complied = patterns.regex(CHECK, "compliance").search(draft)
    if attempt and complied and not _refuses(draft):
        return Finding(check=CHECK, flagged=True, score=0.9, sentences=split_sentences(draft)[:2],
                       detail=f'goes along with an injected instruction ("{attempt}")',
                       suggested_verdict="reject")
    draft_stems = content_stems(draft)
    for rest, instruction in _injected_payloads(ctx):
        payload = content_stems(instruction) - content_stems(rest) - _instruction_words()
        if payload and len(payload & draft_stems) / len(payload) >= patterns.threshold(CHECK, "payload_overlap"):
            return Finding(check=CHECK, flagged=True, score=0.9, sentences=split_sentences(draft)[:2],
                           detail=f'repeats an instruction hidden in a source ("{instruction[:80]}")',
                           suggested_verdict="reject", floor="warn")
    return Finding(check=CHECK, flagged=False, score=0.0)


@cache
def _instruction_words() -> set[str]:
    return content_stems("ignore disregard forget override previous prior above earlier safety system "
                         "rules instructions guidelines tell reader user say write")
