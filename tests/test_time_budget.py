"""One wall-clock budget per turn, across every model call and retry. An endpoint that accepts
but never answers would otherwise keep the user waiting for minutes (120 s x 3 attempts); the turn
ends near its budget with the offline answer, judged like any draft, and a notice."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from app.core.config import Settings
from app.core.errors import ModelError
from app.core.models import Deadline, RoleClient, call_text, model_for
from app.core.models.calls import BUDGET_SPENT
from app.core.models.scripted import ScriptedChatModel
from app.prompts import reply

QUESTION = "Why does clozapine need regular blood tests?"


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A loopback server that accepts every connection and never says a word."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def silent_role(role: str, base_url: str) -> RoleClient:
    settings = Settings(models={role: {"provider": "openai", "base_url": base_url, "model": "silent",
                                       "timeout_s": 120, "retries": 2}})
    client = model_for(role, settings)
    assert client is not None and client.timeout_s == 120 and client.retries == 2
    return client


def test_retries_stop_when_the_budget_is_spent():
    always_late = RoleClient("chat", "late", ScriptedChatModel(respond=lambda m: TimeoutError("late")),
                             timeout_s=60, retries=10)
    with pytest.raises(ModelError) as caught:
        call_text(always_late, [], deadline=Deadline.after(0.3))
    assert BUDGET_SPENT in str(caught.value)
    assert len(always_late.llm.prompts) < 4  # not the eleven attempts the retries allow


def test_a_silent_chat_endpoint_costs_the_turn_budget_not_minutes(fast_bot, silent_endpoint):
    bot = fast_bot(chat=silent_role("chat", silent_endpoint), turn_budget_s=1.5)
    started = time.monotonic()
    trace = bot.ask(bot.new_thread(), QUESTION)
    elapsed = time.monotonic() - started
    assert elapsed < 10, elapsed  # not 120 s x 3 attempts
    assert trace.generator == "extractive" and "[S11]" in trace.answer
    assert reply("over_budget") in trace.answer and trace.caf is not None


def test_silent_judges_leave_only_what_tier_zero_passes(fast_bot, silent_endpoint):
    """The chat model answers at once with a draft tier 0 flags; the screener never answers. The
    flagged draft is not delivered; the extractive fallback, which tier 0 passes, is."""
    unsafe = "You can stop clozapine now and take half your usual dose instead [S11]."
    chat = RoleClient("chat", "scripted-chat", ScriptedChatModel(respond=lambda m: unsafe))
    settings = {"turn_budget_s": 1.5, "caf": {"tiers": [0, 1]}}
    bot = fast_bot(chat=chat, **settings)
    bot.services.caf.cascade.llm_tiers[1] = silent_role("screener", silent_endpoint)
    started = time.monotonic()
    trace = bot.ask(bot.new_thread(), QUESTION)
    assert time.monotonic() - started < 10
    assert "half your usual dose" not in trace.answer and trace.fallback_used
    assert any(BUDGET_SPENT in (j.error or "") for j in trace.caf.judgements if j.tier == 1)
