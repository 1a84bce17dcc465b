"""A short soak on the fast fakes (bench/soak.py runs the long one on the real embedder and index):
faults in every model role, several writers on a few conversations, and an independent witness of
what the cascade judged. Nothing unchecked is delivered and no turn is lost; and the witness does
catch a filter that breaks its promise."""

from __future__ import annotations

import pytest

from app.core.config import Settings
from app.graph.services import Services
from app.session import Chatbot
from bench.soak import fault_clients, questions_from_scenarios, soak
from judges.filter import CriticalAnalysisFilter
from judges.local.resources import Resources
from judges.schema import FilterOutcome
from tests.fakes import HashingEmbedder, KeywordIdentifier


def soak_bot(tmp_path, knowledge_base, seed: int):
    settings = Settings(data_dir=tmp_path / "data", turn_lock_timeout_s=60)
    faults, clients = fault_clients(seed, rate=0.4)
    embedder = HashingEmbedder()
    resources = Resources.from_settings(settings, embedder)
    caf = CriticalAnalysisFilter.from_settings(settings, resources, screener=clients["screener"],
                                               judge=clients["judge"], refiner=clients["refiner"])
    services = Services.from_settings(settings, embedder=embedder, identifier=KeywordIdentifier(knowledge_base),
                                      chat=clients["chat"], caf=caf, crisis_screener=clients["screener"])
    return Chatbot(settings, services), faults


def test_faults_everywhere_and_concurrent_writers_deliver_nothing_unchecked_and_lose_nothing(
        tmp_path, knowledge_base):
    bot, faults = soak_bot(tmp_path, knowledge_base, seed=3)
    with bot:
        report = soak(bot, faults, turns=120, writers=4, conversations=2, seed=3, max_seconds=240,
                      questions=questions_from_scenarios())
    assert report.errors == 0, report.problems
    assert report.turns_answered == report.turns_asked == 120 - report.busy and report.busy == 0
    assert report.delivered_unchecked == 0 and report.lost_turns == 0, report.problems
    faulted = {key.split(":")[0] for key, n in faults.injected.items() if n and not key.endswith(
        (":good", ":honest", ":rewrite"))}
    assert {"chat", "screener", "judge"} <= faulted  # faults in every role that is called often…
    assert any(key.startswith("refiner:") for key in faults.injected)  # …and the refiner was called
    assert report.withheld < report.turns_answered  # answers were delivered, not only refusals


def test_the_witness_catches_a_filter_that_delivers_what_it_rejected(tmp_path, knowledge_base, monkeypatch):
    real_review = CriticalAnalysisFilter.review

    def leaky(self, ctx, **kwargs) -> FilterOutcome:
        outcome = real_review(self, ctx, **kwargs)
        return outcome.model_copy(update={"text": ctx.draft})  # the draft, whatever was decided

    monkeypatch.setattr(CriticalAnalysisFilter, "review", leaky)
    bot, faults = soak_bot(tmp_path, knowledge_base, seed=5)
    with bot:
        report = soak(bot, faults, turns=40, writers=2, conversations=2, seed=5, max_seconds=120,
                      questions=questions_from_scenarios())
    assert report.delivered_unchecked > 0


@pytest.fixture(autouse=True)
def _quiet_logs(caplog):
    caplog.set_level("ERROR")
