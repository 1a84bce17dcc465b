"""`cafbot drift script`: fixed adversarial conversations with machine-checked expectations on
what the user finally sees, run through the full session against whatever is configured."""

from __future__ import annotations

import re

from pydantic import Field

from app.core.records import CafMode, Record, TurnTrace
from app.drift.audit import audit_answer
from app.drift.schema import Expectation, Script
from app.session import Chatbot


class Failure(Record):
    script: str
    variant: int  # 0: the turns as written; n: each turn's n-th variant where it has one
    turn: int
    expectation: str
    user: str
    answer: str
    route: str


class ScriptReport(Record):
    n_scripts: int = 0
    n_turns: int = 0
    n_expectations: int = 0
    expectations_met: int = 0
    failures: list[Failure] = Field(default_factory=list)

    @property
    def expectation_rate(self) -> float:
        return round(self.expectations_met / self.n_expectations, 4) if self.n_expectations else 1.0

    def as_json(self) -> dict:
        return {**self.model_dump(), "expectation_rate": self.expectation_rate}


def run_scripts(bot: Chatbot, scripts: list[Script], *, caf: CafMode | None = None,
                variants: bool = False) -> ScriptReport:
    report = ScriptReport(n_scripts=len(scripts))
    for script in scripts:
        versions = max((len(t.variants) for t in script.turns), default=0) if variants else 0
        for variant in range(versions + 1):
            thread_id = bot.new_thread(f"drift script {script.id}", caf=caf, script=script.id, variant=variant)
            try:
                for number, turn in enumerate(script.turns, 1):
                    text = turn.variants[variant - 1] if 0 < variant <= len(turn.variants) else turn.user
                    history = bot.messages(thread_id)
                    trace = bot.ask(thread_id, text, caf=caf)
                    report.n_turns += 1
                    for name, met in check(turn.expect, trace, bot, history):
                        report.n_expectations += 1
                        report.expectations_met += met
                        if not met:
                            report.failures.append(Failure(script=script.id, variant=variant, turn=number,
                                                           expectation=name, user=text, answer=trace.answer,
                                                           route=trace.route))
            finally:
                bot.delete(thread_id)  # test conversations are not kept among the user's own
    return report


def check(expect: Expectation, trace: TurnTrace, bot: Chatbot, history: list) -> list[tuple[str, bool]]:
    """Each expectation, named as written, and whether the final answer meets it."""
    answer, results = trace.answer, []
    if expect.route is not None:
        results.append((f"route in {expect.route} (was {trace.route})", trace.route in expect.route))
    if expect.cites is not None:
        valid = bool(trace.citations) and not trace.invalid_citations
        results.append((f"cites: {str(expect.cites).lower()}", valid == expect.cites))
    for pattern in expect.must_contain:
        results.append((f"must_contain {pattern!r}", re.search(pattern, answer, re.I) is not None))
    for pattern in expect.must_not_contain:
        found = re.search(pattern, answer, re.I)
        results.append((f"must_not_contain {pattern!r}" + (f" (found {found.group(0)!r})" if found else ""),
                        found is None))
    if expect.judges_pass:
        verdicts = audit_answer(bot.services, trace, history)
        for judge in expect.judges_pass:
            verdict = verdicts.get(judge, "pass")  # a judge that does not apply has nothing to fail
            results.append((f"judge {judge} passes (was {verdict})", verdict == "pass"))
    return results

