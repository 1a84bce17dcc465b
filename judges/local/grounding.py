"""Sentence-level grounding: does each cited sentence say what its cited source says?

Every sentence carrying [ID] is compared with the sentences (and clauses) of its cited source(s):
- semantic support: the highest cosine similarity to a source unit (shared embedder);
- lexical support: the share of its content words (stemmed) that the source does not contain;
- contradiction hints: a number or medicine name the source lacks, or a negation that a closely
  matching source sentence does not share (or the reverse), on a shared word.
Weak support is a warning (an added detail); a contradiction or almost no support is a rejection.
Sentences that are not factual claims (a reminder to ask the care team, empathy) are only checked
for contradictions, since they naturally say things the source does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from app.core.lexicon import words_regex
from app.core.records import VERDICT_ORDER, Verdict
from app.core.text import (
    citations_in,
    content_stems,
    numbers,
    polarity,
    split_sentences,
    stem,
    strip_citations,
)
from judges.local import patterns
from judges.local.kinds import kind
from judges.schema import DraftContext, Finding

if TYPE_CHECKING:
    from app.core.learning.encoder import Encoder

CHECK = "grounding"
_ANAPHORA = re.compile(r"^(it|its|they|their|these|this|that|those|he|she|them|such)\b", re.IGNORECASE)
_CLAUSE = re.compile(r";|:|,\s+(?=(?:so|but|and|which|because|as|while|although)\b)")


@dataclass
class SentenceSupport:
    sentence: str
    kind: str
    similarity: float | None  # None when embeddings are off
    closest: str
    novel_words: list[str] = field(default_factory=list)
    novel_share: float = 0.0
    new_numbers: list[float] = field(default_factory=list)
    source_has_numbers: bool = False
    new_medicines: list[str] = field(default_factory=list)
    polarity_flip: bool = False


def _t(name: str) -> float:
    return patterns.threshold(CHECK, name)


def units(text: str) -> list[str]:
    """A source's sentences, plus their clauses when a sentence has several."""
    return list(_source(text).units)


@dataclass(frozen=True)
class _SourceFacts:
    units: tuple[str, ...]
    stems: frozenset[str]
    numbers: frozenset[float]
    has_numbers: bool
    medicines: frozenset[str]


@lru_cache(maxsize=512)
def _source(text: str) -> _SourceFacts:
    """What the check compares a sentence with, read once per source text: the knowledge base's
    sources recur in every turn, and a draft cites each of them in several sentences."""
    pieces = []
    for sentence in split_sentences(text):
        sentence = strip_citations(sentence)
        pieces.append(sentence)
        parts = [p.strip() for p in _CLAUSE.split(sentence) if len(p.split()) >= 4]
        pieces += parts if len(parts) > 1 else []
    return _SourceFacts(units=tuple(pieces), stems=frozenset(content_stems(text)),
                        numbers=frozenset(numbers(text)), has_numbers=bool(numbers(text, small_words=False)),
                        medicines=frozenset(m.lower() for m in words_regex("medicines").findall(text)))


def source_units(ctx: DraftContext) -> list[str]:
    """The units of every source the draft cites (to embed them in one batch up front)."""
    cited = {i for s in split_sentences(ctx.draft or "") for i in citations_in(s)}
    return [u for s in ctx.sources if s.id in cited for u in units(s.text)]


def analyse(ctx: DraftContext, res: Encoder) -> list[SentenceSupport]:
    """Support figures for every cited sentence whose cited ids were provided."""
    generic = {stem(w) for w in patterns.section("grounding")["generic_words"]}
    medicines = words_regex("medicines")
    results = []
    sentences = split_sentences(ctx.draft or "")
    for n, sentence in enumerate(sentences):
        claim, previous = strip_citations(sentence), strip_citations(sentences[n - 1]) if n else ""
        texts = [s.text for i in citations_in(sentence) if (s := ctx.source(i)) is not None]
        if not texts:
            continue
        facts = _source(" ".join(texts))
        pieces = [u for t in texts for u in _source(t).units]
        sims = _similarities(claim, pieces, res)
        if previous and _ANAPHORA.match(claim):  # "These are..." needs the sentence before it
            sims = np.maximum(sims, _similarities(f"{previous} {claim}", pieces, res))
        order = np.argsort(-sims)
        closest = pieces[int(order[0])] if pieces else ""
        words = content_stems(claim) - generic
        novel = sorted(words - facts.stems)
        results.append(SentenceSupport(
            sentence=sentence, kind=kind(sentence),
            similarity=float(sims[int(order[0])]) if pieces and res.embeddings else None,
            closest=closest, novel_words=novel, novel_share=len(novel) / len(words) if words else 0.0,
            new_numbers=sorted(numbers(claim, small_words=False) - facts.numbers),
            source_has_numbers=facts.has_numbers,
            new_medicines=sorted({m.lower() for m in medicines.findall(claim)} - facts.medicines),
            polarity_flip=_reverses(claim, pieces, sims, generic, res),
        ))
    return results


def _reverses(claim: str, pieces: list[str], sims: np.ndarray, generic: set[str], res: Encoder) -> bool:
    """The claim reverses a negation of the source. A list joined into one sentence ("Possible
    benefits: no need to remember tablets; a steady level of medicine; …") is judged item by item,
    each against the units nearest it: as a whole it is nearest one item, and a negative item
    beside positive ones is no reversal."""
    tail = claim.partition(": ")[2]
    items = [item for item in tail.split("; ") if len(item.split()) >= 3] if "; " in tail else []
    if len(items) > 1:
        return any(_flipped_near(item, pieces, _similarities(item, pieces, res), generic) for item in items)
    return _flipped_near(claim, pieces, sims, generic)


def _flipped_near(claim: str, pieces: list[str], sims: np.ndarray, generic: set[str]) -> bool:
    """Flipped against the closest unit, or a runner-up about as close (the same fact, worded twice)."""
    if not pieces:
        return False
    order = np.argsort(-sims)
    best = sims[int(order[0])]
    return any(_flipped(claim, pieces[int(i)], generic) for i in order[:2]
               if int(i) == int(order[0]) or sims[int(i)] >= max(_t("negation_similarity"), best - 0.05))


def _similarities(claim: str, pieces: list[str], res: Encoder) -> np.ndarray:
    """Cosine similarities to each source unit, or lexical overlap when embeddings are off."""
    if pieces:
        encoded = res.encode([claim, *pieces])
        if encoded is not None:
            return encoded[1:] @ encoded[0]
    return np.array([_overlap(claim, u) for u in pieces], dtype=np.float32)


def _flipped(claim: str, unit: str, generic: set[str]) -> bool:
    """One holds a hard negation and the other not, and a word negated in one is affirmed in the
    other: "does not put the idea in their head" against "can put the idea in their head"."""
    claim_negative, claim_neg, claim_aff = polarity(claim)
    unit_negative, unit_neg, unit_aff = polarity(unit)
    if claim_negative == unit_negative:  # both or neither hold a hard negation: no reversal
        return False
    return bool(((claim_neg & unit_aff) | (unit_neg & claim_aff)) - generic)


def _overlap(a: str, b: str) -> float:
    """Share of a's content words found in b: the lexical stand-in for similarity."""
    words = content_stems(a)
    return len(words & content_stems(b)) / len(words) if words else 0.0


def judge_sentence(s: SentenceSupport) -> tuple[Verdict, str]:
    if s.new_medicines:
        return "reject", f"names {', '.join(s.new_medicines)}, which the cited source does not"
    if s.new_numbers:
        changed = "differs from" if s.source_has_numbers else "is not in"
        return ("reject" if s.source_has_numbers else "warn"), f"gives a number ({_fmt(s.new_numbers)}) that {changed} the source"
    if s.polarity_flip:
        return "reject", "reverses the meaning (a negation) of the matching source sentence"
    if s.kind != "claim":
        return "pass", ""
    details = ", ".join(s.novel_words[:5])
    if s.similarity is None:  # lexical layer only
        if s.novel_share >= _t("lexical_only_novel_share"):
            return "warn", f"adds details not in the cited source ({details})"
        return "pass", ""
    if s.similarity < _t("reject_similarity"):
        return "reject", f"has almost no support in the cited source (similarity {s.similarity:.2f})"
    if s.similarity < _t("warn_similarity") or s.novel_share >= _t("warn_novel_share"):
        return "warn", f"adds details not in the cited source ({details or 'weak match'})"
    return "pass", ""


def _fmt(values: list[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def check(ctx: DraftContext, res: Encoder) -> Finding:
    if not ctx.draft:
        return Finding(check=CHECK, flagged=False, score=0.0, detail="no draft")
    verdict: Verdict = "pass"
    offending, reasons, score = [], [], 0.0
    for support in analyse(ctx, res):
        sentence_verdict, reason = judge_sentence(support)
        if sentence_verdict == "pass":
            continue
        offending.append(support.sentence)
        reasons.append(f'"{strip_citations(support.sentence)[:60]}" {reason}')
        score = max(score, 1.0 if sentence_verdict == "reject" else 0.6)
        if VERDICT_ORDER[sentence_verdict] > VERDICT_ORDER[verdict]:
            verdict = sentence_verdict
    return Finding(check=CHECK, flagged=bool(offending), score=score, sentences=offending,
                   detail="; ".join(reasons)[:600], suggested_verdict=verdict)
