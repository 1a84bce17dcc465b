"""Answer quality, measured on the product's own path: every question is a real turn of a real
conversation (its history asked first), and the delivered answer is scored against an answer key.

An answer key names the key points a good short answer conveys (each a list of regex
alternatives), content it must never contain, the route it should take and the sources it should
cite. "Fully correct" means every key point, no must-not content, the right route and (when sources
are expected) one of them cited.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import Field, ValidationError, field_validator

from app.core.errors import ConfigError
from app.core.records import Record, Route, TurnTrace

Ask = Callable[[list[str], str], TurnTrace]  # (earlier user messages, question) -> the turn


class AnswerCase(Record):
    id: str
    question: str
    history: list[str] = Field(default_factory=list)
    persona: str = ""
    kind: str = ""
    route: Route
    sources: list[str] = Field(default_factory=list)
    key_points: list[list[str]] = Field(default_factory=list)
    must_not: list[str] = Field(default_factory=list)

    @field_validator("key_points")
    @classmethod
    def _points_compile(cls, points: list[list[str]]) -> list[list[str]]:
        for alternatives in points:
            if not alternatives:
                raise ValueError("a key point needs at least one regex alternative")
            for rx in alternatives:
                _compile(rx)
        return points

    @field_validator("must_not")
    @classmethod
    def _must_not_compile(cls, patterns: list[str]) -> list[str]:
        for rx in patterns:
            _compile(rx)
        return patterns


class CaseResult(Record):
    id: str
    kind: str
    expected_route: str
    route: str
    route_ok: bool
    key_points: int
    key_points_hit: int
    missed_points: list[int]
    must_not_hits: list[str]
    citations: list[str]
    citation_hit: bool | None  # None: no source expected
    fully_correct: bool
    answer: str
    resolved_question: str = ""


class AnswerReport(Record):
    n: int
    key_point_coverage: float
    fully_correct: float
    must_not_hits: int
    route_accuracy: float
    citation_hit_rate: float
    per_kind: dict[str, dict[str, float]]
    per_question: list[CaseResult]


def _compile(rx: str) -> re.Pattern[str]:
    try:
        return re.compile(rx, re.IGNORECASE)
    except re.error as error:
        raise ValueError(f"regex {rx!r} does not compile: {error}") from error


def load_cases(path: Path) -> list[AnswerCase]:
    """Every line an answer key; a bad line stops the run naming file, line and field."""
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise ConfigError(f"{path}: no answer-key .jsonl file there")
    cases: list[AnswerCase] = []
    for file in files:
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                cases.append(AnswerCase.model_validate(json.loads(line)))
            except json.JSONDecodeError as error:
                raise ConfigError(f"{file}:{number}: not JSON ({error.msg})") from None
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ConfigError(f"{file}:{number}: {where}: {first['msg']}") from None
    if len({c.id for c in cases}) != len(cases):
        raise ConfigError(f"{path}: answer-key ids are not unique")
    return cases


def score(case: AnswerCase, trace: TurnTrace) -> CaseResult:
    answer = trace.answer
    missed = [n for n, alternatives in enumerate(case.key_points)
              if not any(_compile(rx).search(answer) for rx in alternatives)]
    hits = [rx for rx in case.must_not if _compile(rx).search(answer)]
    cited = list(dict.fromkeys(trace.citations))
    citation_hit = bool(set(cited) & set(case.sources)) if case.sources else None
    route_ok = trace.route == case.route
    return CaseResult(
        id=case.id, kind=case.kind, expected_route=case.route, route=trace.route, route_ok=route_ok,
        key_points=len(case.key_points), key_points_hit=len(case.key_points) - len(missed),
        missed_points=missed, must_not_hits=hits, citations=cited, citation_hit=citation_hit,
        fully_correct=not missed and not hits and route_ok and citation_hit is not False,
        answer=answer, resolved_question=trace.resolved_question,
    )


def _summary(results: list[CaseResult]) -> dict[str, float]:
    points = sum(r.key_points for r in results)
    cited = [r.citation_hit for r in results if r.citation_hit is not None]
    return {
        "n": len(results),
        "key_point_coverage": sum(r.key_points_hit for r in results) / points if points else 1.0,
        "fully_correct": sum(r.fully_correct for r in results) / len(results),
        "must_not_hits": sum(len(r.must_not_hits) for r in results),
        "route_accuracy": sum(r.route_ok for r in results) / len(results),
        "citation_hit_rate": sum(cited) / len(cited) if cited else 1.0,
    }


def evaluate(cases: Iterable[AnswerCase], ask: Ask) -> AnswerReport:
    results = [score(case, ask(case.history, case.question)) for case in cases]
    if not results:
        raise ConfigError("no answer keys to evaluate")
    kinds = sorted({r.kind for r in results})
    per_kind = {kind: _summary([r for r in results if r.kind == kind]) for kind in kinds}
    overall = _summary(results)
    return AnswerReport(n=len(results), key_point_coverage=overall["key_point_coverage"],
                        fully_correct=overall["fully_correct"],
                        must_not_hits=int(overall["must_not_hits"]),
                        route_accuracy=overall["route_accuracy"],
                        citation_hit_rate=overall["citation_hit_rate"],
                        per_kind=per_kind, per_question=results)
