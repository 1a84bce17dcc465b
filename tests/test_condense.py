"""Condensing a follow-up with a model: the rewrite retrieval reads, and the offline reading
whenever the model fails or answers with something that is not a rewrite."""

from __future__ import annotations

import pytest

from app.core.models import RoleClient
from app.core.models.scripted import ScriptedChatModel
from app.retrieval.condense import usable_rewrite


def condenser(*replies) -> RoleClient:
    return RoleClient("screener", "scripted-condenser", ScriptedChatModel(list(replies)))


@pytest.mark.parametrize(("text", "expected"), [
    ("Is family intervention free?", "Is family intervention free?"),
    ('Standalone question: "Is family intervention free?"', "Is family intervention free?"),
    ("\n  Is clozapine safe with alcohol?\nI hope this helps!", "Is clozapine safe with alcohol?"),
    ("", None),
    ("Family intervention is usually free on the NHS. " * 10, None),  # an answer, not a rewrite
])
def test_only_a_rewrite_of_the_message_is_used(text, expected):
    assert usable_rewrite(text, "is it free?") == expected


@pytest.mark.slow
def test_a_follow_up_is_read_as_the_models_rewrite_with_the_conversation_in_its_prompt(make_bot):
    bot = make_bot()
    bot.services.condenser = model = condenser("Is family intervention free?")
    thread = bot.new_thread()
    first = bot.ask(thread, "What is family intervention?")
    trace = bot.ask(thread, "is it free?")
    assert [c.purpose for c in first.model_calls] == []  # nothing to condense in a first message
    assert [c.purpose for c in trace.model_calls] == ["condense"] and trace.model_calls[0].ok
    assert trace.resolved_question.endswith("Is family intervention free?")
    prompt = model.llm.prompts[0][0].content
    assert "User: What is family intervention?" in prompt and "Latest message: is it free?" in prompt
    assert "S15" in trace.citations, trace.answer


@pytest.mark.slow
@pytest.mark.parametrize("failure", [TimeoutError("the model timed out"), "", "Yes. " * 200])
def test_when_the_model_fails_the_offline_reading_answers(make_bot, failure):
    bot = make_bot()
    bot.services.condenser = condenser(failure)
    thread = bot.new_thread()
    bot.ask(thread, "What is family intervention?")
    trace = bot.ask(thread, "how long does it go on for")
    assert [c.purpose for c in trace.model_calls] == ["condense"]
    assert trace.identification.context == "What is family intervention?"  # the offline reading
    assert trace.route == "answer" and "S15" in trace.citations, trace.answer
