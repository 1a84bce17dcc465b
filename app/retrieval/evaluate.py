"""Retrieval evaluation: recall@1, recall@3, MRR, not-covered accuracy and latency.

Definitions (covered questions have a list of expected source ids):
- the ranking is the identification's candidates; an outcome of "none" ranks nothing;
- recall@k = |expected ∩ top k| / min(|expected|, k), averaged over covered questions: capped at
  k, so a two-source question scores 1.0 at k = 1 when its first candidate is either source;
- MRR = 1 / rank of the first expected source (0 when absent), averaged over covered questions;
- not-covered accuracy = the share of not-covered questions whose outcome is "none";
- latency = the wall time of each `identify` call, warm (one untimed call first), p50 and p95.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from app.core.errors import CafbotError
from app.core.records import Record
from app.core.stats import percentile
from app.retrieval.identify import SourceIdentifier


class EvalQuestion(Record):
    id: str
    question: str = Field(min_length=1)
    expected: list[str] | Literal["not_covered"]
    kind: str = ""

    @property
    def covered(self) -> bool:
        return self.expected != "not_covered"


class EvalResult(BaseModel):
    id: str
    kind: str
    question: str
    expected: list[str] | Literal["not_covered"]
    outcome: str
    ranked: list[str]
    latency_ms: float


class EvalReport(BaseModel):
    recall_at_1: float
    recall_at_3: float
    mrr: float
    not_covered_accuracy: float
    latency_ms_p50: float
    latency_ms_p95: float
    n: int
    n_covered: int
    n_not_covered: int
    covered_answered_none: float  # share of covered questions wrongly sent to "no match"
    outcomes: dict[str, int]
    by_kind: dict[str, dict[str, float]]  # the same metrics per question kind, with their counts


def load_questions(path: Path) -> list[EvalQuestion]:
    if not path.is_file():
        raise CafbotError(f"{path}: no such question file (JSON lines with id, question, expected).")
    questions, problems = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            questions.append(EvalQuestion.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as error:
            problems.append(f"{path.name}:{number}: {str(error).splitlines()[0]}")
    if problems:
        raise CafbotError("Invalid question file:\n  " + "\n  ".join(problems))
    if not questions:
        raise CafbotError(f"{path}: no questions.")
    return questions


def recall_at(expected: list[str], ranked: list[str], k: int) -> float:
    return len(set(expected) & set(ranked[:k])) / min(len(expected), k)


def reciprocal_rank(expected: list[str], ranked: list[str]) -> float:
    return next((1.0 / rank for rank, sid in enumerate(ranked, 1) if sid in expected), 0.0)


def run(identifier: SourceIdentifier, questions: list[EvalQuestion]) -> list[EvalResult]:
    identifier.identify(questions[0].question)  # warm-up: caches, lazy imports, first query
    results = []
    for q in questions:
        started = time.perf_counter()
        found = identifier.identify(q.question)
        elapsed = (time.perf_counter() - started) * 1000
        ranked = [] if found.outcome == "none" else [c.source_id for c in found.candidates]
        results.append(EvalResult(id=q.id, kind=q.kind, question=q.question, expected=q.expected,
                                  outcome=found.outcome, ranked=ranked, latency_ms=elapsed))
    return results


def _metrics(results: list[EvalResult]) -> dict[str, float]:
    covered = [r for r in results if r.expected != "not_covered"]
    uncovered = [r for r in results if r.expected == "not_covered"]
    mean = lambda values: float(np.mean(values)) if values else 0.0  # noqa: E731
    return {
        "recall_at_1": mean([recall_at(r.expected, r.ranked, 1) for r in covered]),  # type: ignore[arg-type]
        "recall_at_3": mean([recall_at(r.expected, r.ranked, 3) for r in covered]),  # type: ignore[arg-type]
        "mrr": mean([reciprocal_rank(r.expected, r.ranked) for r in covered]),  # type: ignore[arg-type]
        "not_covered_accuracy": mean([r.outcome == "none" for r in uncovered]),
        "n": len(results),
        "n_covered": len(covered),
        "n_not_covered": len(uncovered),
    }


def summarise(results: list[EvalResult]) -> EvalReport:
    latencies = [r.latency_ms for r in results]
    covered = [r for r in results if r.expected != "not_covered"]
    groups: dict[str, list[EvalResult]] = defaultdict(list)
    for r in results:
        groups[r.kind or "(none)"].append(r)
    outcomes: dict[str, int] = defaultdict(int)
    for r in results:
        outcomes[r.outcome] += 1
    return EvalReport(
        **{k: v for k, v in _metrics(results).items() if k not in {"n", "n_covered", "n_not_covered"}},
        latency_ms_p50=percentile(latencies, 50),
        latency_ms_p95=percentile(latencies, 95),
        n=len(results), n_covered=len(covered), n_not_covered=len(results) - len(covered),
        covered_answered_none=float(np.mean([r.outcome == "none" for r in covered])) if covered else 0.0,
        outcomes=dict(outcomes),
        by_kind={kind: _metrics(group) for kind, group in sorted(groups.items())},
    )


def report_json(report: EvalReport) -> str:
    return json.dumps(report.model_dump(), indent=2)
