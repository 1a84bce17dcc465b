"""The filter inside the answer graph: warnings carried to the next turns, the bounded refiner
loop, and the fallback whenever a draft cannot be trusted."""

from __future__ import annotations

import pytest

from app.core.config import Settings
from app.core.models import RoleClient
from app.core.models.scripted import ScriptedChatModel
from app.graph.services import Services
from app.session import Chatbot
from judges.filter import CriticalAnalysisFilter

pytestmark = pytest.mark.slow

QUESTION = "Why does clozapine need regular blood tests?"
# Sentences taken from knowledge_base/S11, so tier 0 finds them grounded.
GROUNDED = ("In a small number of people, clozapine lowers the number of white blood cells, which "
            "fight infection [S11]. To catch a drop in white blood cells early, people on clozapine have regular "
            "blood tests [S11].")
REMINDER = " Please check the details of your own blood tests with your care team."
UNSAFE = "You can stop clozapine now and take half your usual dose instead [S11]."


def client(role: str, *replies, respond=None) -> RoleClient:
    return RoleClient(role, f"scripted-{role}", ScriptedChatModel(list(replies), respond=respond))


def reject(messages):
    return {"verdict": "reject", "rule": "medication_safety", "offending": [UNSAFE],
            "reason": "advises stopping a medicine", "suggested_fix": "send the decision to the prescriber"}


@pytest.fixture
def bot_with(tmp_path, default_identifier, embedding_resources):
    bots = []

    def make(chat: RoleClient, **clients) -> Chatbot:
        settings = Settings(data_dir=tmp_path / "data", caf={"warning_ttl_turns": 1, "max_refine_rounds": 2})
        caf = CriticalAnalysisFilter.from_settings(settings, embedding_resources,
                                                   **{"screener": None, "judge": None, "refiner": None, **clients})
        bot = Chatbot(settings, Services.from_settings(settings, identifier=default_identifier,
                                                       embedder=embedding_resources.embedder, chat=chat, caf=caf))
        bots.append(bot)
        return bot

    yield make
    for bot in bots:
        bot.close()


def test_a_warning_reaches_the_next_prompt_and_then_expires(bot_with):
    chat = client("chat", GROUNDED, GROUNDED + REMINDER, GROUNDED + REMINDER)
    bot = bot_with(chat)
    thread = bot.new_thread()
    first = bot.ask(thread, QUESTION)
    assert first.caf.final_verdict == "warn" and first.answer == GROUNDED  # delivered as written
    assert "verification" in {j.judge for j in first.caf.judgements if j.verdict == "warn"}
    warning = first.caf.warnings_issued[0]
    second = bot.ask(thread, QUESTION)
    assert second.warnings_in_prompt == [w for w in first.caf.warnings_issued]
    assert warning in chat.llm.prompts[1][0].content
    third = bot.ask(thread, QUESTION)
    assert third.warnings_in_prompt == []
    assert warning not in chat.llm.prompts[2][0].content


def test_a_rejected_draft_is_refined_and_the_refinement_delivered(bot_with):
    refiner = client("refiner", GROUNDED + REMINDER)
    bot = bot_with(client("chat", UNSAFE), screener=client("screener", respond=reject), refiner=refiner)
    trace = bot.ask(bot.new_thread(), QUESTION)
    assert trace.caf.refine_rounds == 1 and not trace.fallback_used
    assert trace.answer == GROUNDED + REMINDER
    assert "advises stopping a medicine" in refiner.llm.prompts[0][-1].content  # the criticism


def test_the_refiner_loop_is_bounded_then_the_fallback_goes_out(bot_with):
    refiner = client("refiner", respond=lambda messages: UNSAFE)  # never improves
    bot = bot_with(client("chat", UNSAFE), screener=client("screener", respond=reject), refiner=refiner)
    trace = bot.ask(bot.new_thread(), QUESTION)
    assert len(refiner.llm.prompts) == 2 and trace.caf.refine_rounds == 2
    assert trace.fallback_used and trace.caf.final_verdict in ("pass", "warn")  # the fallback's
    assert any(j.verdict == "reject" for j in trace.caf.judgements)  # the drafts were rejected
    assert "half your usual dose" not in trace.answer
    assert "[S11]" in trace.answer and "care team" in trace.answer


@pytest.mark.parametrize("fault", [TimeoutError("timed out"), RuntimeError("HTTP 500"), "{not json", ""],
                         ids=["timeout", "error", "malformed", "empty"])
def test_a_failing_top_judge_never_lets_the_draft_out(bot_with, fault):
    screener = client("screener", respond=lambda messages: fault)
    bot = bot_with(client("chat", UNSAFE), screener=screener)
    trace = bot.ask(bot.new_thread(), QUESTION)
    assert trace.fallback_used and "half your usual dose" not in trace.answer
    assert any(j.error for j in trace.caf.judgements if j.tier == 1)


def test_a_failing_refiner_falls_back(bot_with):
    refiner = client("refiner", ConnectionError("refused"))
    bot = bot_with(client("chat", UNSAFE), screener=client("screener", respond=reject), refiner=refiner)
    trace = bot.ask(bot.new_thread(), QUESTION)
    assert trace.fallback_used and "half your usual dose" not in trace.answer
    assert any("refiner" in e for e in trace.errors)


def test_with_the_filter_off_the_draft_goes_out_unjudged(tmp_path, default_identifier, embedder):
    settings = Settings(data_dir=tmp_path / "data", caf={"enabled": False})
    services = Services.from_settings(settings, identifier=default_identifier, embedder=embedder,
                                      chat=client("chat", UNSAFE))
    assert services.default_caf_mode == "off"
    with Chatbot(settings, services) as bot:
        trace = bot.ask(bot.new_thread(), QUESTION)
    assert trace.answer == UNSAFE and trace.caf is None and not trace.caf_enabled
