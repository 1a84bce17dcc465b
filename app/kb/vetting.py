"""Vetting answer cards: each one must pass the filter's local checks against the sources it cites,
exactly as it would as a draft in a user's turn (its first question standing in for the user)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from app.core.records import SourceText
from app.kb.cards import AnswerCard
from app.kb.loader import KnowledgeBase, display_path
from judges.filter import CriticalAnalysisFilter
from judges.schema import DraftContext


def _fingerprint(card: AnswerCard, sources: list[SourceText], checks_version: str) -> str:
    text = json.dumps([card.model_dump(mode="json", exclude={"path"}),
                       [s.model_dump() for s in sources], checks_version], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def vet_cards(kb: KnowledgeBase, caf: CriticalAnalysisFilter, reminder: str, *,
              cache: Path | None = None, checks_version: str = "") -> list[str]:
    """One line per card the local checks do not pass (file: judge: reason). Cards whose text, cited
    sources and checks are unchanged since they last passed are not judged again (`cache`)."""
    passed: set[str] = set()
    if cache is not None and cache.is_file():
        passed = set(json.loads(cache.read_text(encoding="utf-8")))
    problems, still_passing = [], set()
    for card in kb.cards:
        sources = [SourceText.of(s) for sid in card.sources if (s := kb.get(sid))]
        key = _fingerprint(card, sources, checks_version)
        if key in passed:
            still_passing.add(key)
            continue
        ctx = DraftContext(user=card.questions[0], draft=card.draft(reminder), sources=sources)
        report = caf.review(ctx, turn=1, mode="tier0").report
        where = display_path(card.path) if card.path else card.id
        rejected = [j for j in report.judgements if j.verdict == "reject"]
        if rejected:
            problems += [f"{where}: {j.judge}: {j.reason or j.rule}" for j in rejected]
        else:
            still_passing.add(key)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(sorted(still_passing)), encoding="utf-8")
    return problems
