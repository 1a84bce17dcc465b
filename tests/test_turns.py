"""Whole turns through the real graph, filter, SQLite checkpointer and store, fast: the embedder and
the identifier are the test fakes (tests/fakes.py), the chat model is scripted where one is used."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.core.models import RoleClient
from app.core.models.scripted import ScriptedChatModel
from app.session import UnknownThread
from app.store import StoreError

QUESTION = "Why does clozapine need regular blood tests?"
UNSAFE = "You can stop clozapine now and take half your usual dose instead [S11]."


def scripted_chat(*replies, respond=None) -> RoleClient:
    return RoleClient("chat", "scripted-chat", ScriptedChatModel(list(replies), respond=respond))


def test_an_offline_turn_runs_every_node_and_cites_its_source(fast_bot):
    bot = fast_bot()
    trace = bot.ask(bot.new_thread(), QUESTION)
    assert trace.route == "answer" and trace.generator in ("extractive", "card")  # offline
    assert [n.node for n in trace.nodes] == ["screen_input", "identify_sources", "enhance_prompt",
                                             "generate", "critical_analysis", "respond"]
    assert "S11" in trace.citations and set(trace.citations) <= set(trace.prompt_sources)
    assert trace.caf is not None and trace.caf.mode == "on"


def test_one_chatbot_serves_the_filter_on_and_off_per_turn(fast_bot):
    bot = fast_bot(chat=scripted_chat(respond=lambda messages: UNSAFE))
    thread = bot.new_thread()
    on = bot.ask(thread, QUESTION, caf="on")
    off = bot.ask(thread, QUESTION, caf="off")
    assert "half your usual dose" not in on.answer and on.fallback_used
    assert off.answer == UNSAFE and off.caf is None and off.caf_mode == "off"
    assert [t.caf_mode for t in bot.turn_log.turns(thread)] == ["on", "off"]


def test_tier0_mode_calls_no_llm_judge_even_when_one_is_configured(fast_bot):
    screener = RoleClient("screener", "scripted-screener", ScriptedChatModel([]))  # any call fails loudly
    bot = fast_bot(chat=scripted_chat(respond=lambda messages: UNSAFE))
    bot.services.caf.cascade.llm_tiers[1] = screener
    trace = bot.ask(bot.new_thread(), QUESTION, caf="tier0")
    assert trace.caf.mode == "tier0" and trace.caf.llm_calls == 0 and screener.llm.prompts == []
    assert "half your usual dose" not in trace.answer


def test_a_rejected_llm_draft_is_replaced_by_a_fallback_the_filter_passed(fast_bot):
    bot = fast_bot(chat=scripted_chat(respond=lambda messages: UNSAFE))
    trace = bot.ask(bot.new_thread(), QUESTION)
    assert trace.fallback_used and trace.generator == "llm"
    assert trace.caf.final_verdict in ("pass", "warn")  # the fallback's own verdict
    judged = [j for j in trace.caf.judgements if j.tier == 0]
    assert len(judged) > len(trace.caf.judges_applied)  # the draft and the fallback were both judged


def test_a_crisis_message_takes_the_crisis_route_without_generation(fast_bot):
    chat = scripted_chat()  # any call would exhaust the script
    bot = fast_bot(chat=chat)
    trace = bot.ask(bot.new_thread(), "i cant do this anymore, i want to end my life tonight")
    assert trace.route == "crisis" and "identify_sources" not in [n.node for n in trace.nodes]
    assert chat.llm.prompts == []


def test_an_empty_message_leaves_the_conversation_unchanged(fast_bot):
    bot = fast_bot()
    thread = bot.new_thread()
    bot.ask(thread, QUESTION)
    before = bot.messages(thread)
    assert bot.ask(thread, " \u200b ").route == "notice"
    assert bot.messages(thread) == before


def test_a_conversation_survives_a_restart(fast_bot, tmp_path):
    first_bot = fast_bot(data_dir=tmp_path / "shared")
    thread = first_bot.new_thread()
    first = first_bot.ask(thread, QUESTION)
    first_bot.close()
    second_bot = fast_bot(data_dir=tmp_path / "shared")  # a new process opens the same files
    assert second_bot.messages(thread)[1].content == first.answer
    assert second_bot.ask(thread, "How can I sleep better at night?").turn == 2
    assert [t.turn for t in second_bot.turn_log.turns(thread)] == [1, 2]


def test_a_fork_starts_where_the_parent_stood_and_leaves_the_parent_alone(fast_bot):
    bot = fast_bot()
    parent = bot.new_thread()
    bot.ask(parent, QUESTION)
    bot.ask(parent, "How can I sleep better at night?")
    child = bot.fork(parent, at_turn=1, label="sample-1")
    assert [m.content for m in bot.messages(child)] == [m.content for m in bot.messages(parent)[:2]]
    assert bot.ask(child, "What helps with stress?").turn == 2
    assert len(bot.messages(parent)) == 4 and len(bot.messages(child)) == 4
    copied, own = bot.turn_log.turns(child)
    assert (copied.turn, own.turn) == (1, 2) and copied.thread_id == own.thread_id == child
    assert copied.user_message == bot.turn_log.turns(parent)[0].user_message
    assert bot.turn_log.conversation(child).parent_thread_id == parent
    with pytest.raises(UnknownThread):
        bot.fork(parent, at_turn=7)


def test_conversations_are_listed_and_deleted_from_every_store(fast_bot):
    bot = fast_bot()
    keep, gone = bot.new_thread(label="keep"), bot.new_thread(label="gone")
    bot.ask(keep, QUESTION)
    bot.ask(gone, QUESTION)
    assert {c.thread_id: c.turns for c in bot.list_threads()} == {keep: 1, gone: 1}
    assert bot.delete(gone) is True
    assert [c.thread_id for c in bot.list_threads()] == [keep]
    assert bot.messages(gone) == [] and bot.turn_log.turns(gone) == []
    assert bot.delete(gone) is False


def test_the_store_imports_without_langgraph():
    code = ("import sys, app.store; "
            "bad = sorted(m for m in sys.modules if m.startswith(('langgraph', 'langchain', 'torch'))); "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


CONVERSATION = [
    "What are negative symptoms?",
    "How can I sleep better at night?",
    "What is a long-acting injection?",
    "How can family members help?",
    "What helps with stress?",
    "Can I work or study with schizophrenia?",
]


def test_a_longer_conversation_keeps_every_turn_in_order(fast_bot):
    bot = fast_bot()
    thread = bot.new_thread()
    traces = [bot.ask(thread, text) for text in CONVERSATION]
    assert [t.turn for t in traces] == list(range(1, len(CONVERSATION) + 1))
    assert all(t.answer.strip() for t in traces)
    assert [t.user_message for t in bot.turn_log.turns(thread)] == CONVERSATION
    assert len(bot.messages(thread)) == 2 * len(CONVERSATION)


WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from app.core.config import Settings, DEFAULT_KNOWLEDGE_BASE
from app.graph.services import Services
from app.kb.loader import load_knowledge_base
from app.session import Chatbot
from tests.fakes import HashingEmbedder, KeywordIdentifier

settings = Settings(data_dir=Path({data!r}))
kb = load_knowledge_base(DEFAULT_KNOWLEDGE_BASE)
services = Services.from_settings(settings, embedder=HashingEmbedder(), identifier=KeywordIdentifier(kb), chat=None)
with Chatbot(settings, services) as bot:
    for n in range(5):
        bot.ask({thread!r}, "What helps with sleep, question " + str(n) + " from " + sys.argv[1])
"""


def test_two_processes_on_one_conversation_keep_every_turn(fast_bot, tmp_path):
    from tests.conftest import REPO

    bot = fast_bot(data_dir=tmp_path / "shared")
    thread = bot.new_thread()
    script = WRITER.format(repo=str(REPO), data=str(tmp_path / "shared"), thread=thread)
    writers = [subprocess.Popen([sys.executable, "-c", script, name], stderr=subprocess.PIPE, text=True)
               for name in ("first", "second")]
    for writer in writers:
        assert writer.wait(timeout=240) == 0, writer.stderr.read()
    turns = bot.turn_log.turns(thread)
    assert [t.turn for t in turns] == list(range(1, 11))
    assert len({t.user_message for t in turns}) == 10
    assert len(bot.messages(thread)) == 20


def test_a_conversation_whose_saved_state_was_lost_is_an_error_not_a_fresh_start(fast_bot, tmp_path):
    from app.store import StoreError

    bot = fast_bot(data_dir=tmp_path / "shared")
    thread = bot.new_thread()
    bot.ask(thread, QUESTION)
    bot.checkpointer.delete_thread(thread)  # as if conversations.sqlite had been emptied
    restarted = fast_bot(data_dir=tmp_path / "shared")  # checked once per process, when it first answers
    with pytest.raises(StoreError, match="no saved state"):
        restarted.ask(thread, QUESTION)
    assert [t.turn for t in restarted.turn_log.turns(thread)] == [1]


def test_a_conversation_whose_stores_hold_different_turns_is_an_error(fast_bot, tmp_path):
    """A turn log restored from a later backup than the conversation store: the next answer would
    be read against a history nobody sees, so it is refused, naming both counts."""
    bot = fast_bot(data_dir=tmp_path / "shared")
    thread = bot.new_thread()
    first = bot.ask(thread, QUESTION)
    bot.turn_log.record(first.model_copy(update={"turn": 2}))  # a turn the saved state does not hold
    restarted = fast_bot(data_dir=tmp_path / "shared")
    with pytest.raises(StoreError, match="has 2 recorded turns but its saved state holds 1"):
        restarted.ask(thread, QUESTION)


def test_the_english_only_notice_always_carries_the_crisis_contacts(fast_bot):
    from app.core.config_sections import CrisisContact

    bot = fast_bot(crisis_contacts=[CrisisContact(name="Test Line", contact="call 0000")])
    trace = bot.ask(bot.new_thread(), "Bonjour, quels sont les effets secondaires de la clozapine ?")
    assert trace.route == "notice" and "only answer in English" in trace.answer
    assert "Test Line: call 0000" in trace.answer


@pytest.mark.parametrize("thread", ["../outside", "a/b", "", "x" * 65, "id with spaces"])
def test_a_thread_id_that_is_not_an_id_is_refused_before_it_names_a_file(fast_bot, tmp_path, thread):
    bot = fast_bot()
    with pytest.raises(UnknownThread, match="is not a conversation id"):
        bot.ask(thread, QUESTION)
    assert not (tmp_path / "data" / "outside.lock").exists()


def test_a_writer_that_loses_the_race_leaves_no_saved_state(fast_bot, tmp_path, monkeypatch):
    """Should the lock ever fail (a lost connection releases a Postgres lock mid-turn), the turn log
    still takes one answer per turn number, and the loser's conversation state goes with its
    turn: the state never holds an answer nobody saw."""
    from contextlib import nullcontext

    from app.store import TurnConflict

    winner, loser = fast_bot(data_dir=tmp_path / "shared"), fast_bot(data_dir=tmp_path / "shared")
    thread = winner.new_thread()
    winner.ask(thread, QUESTION)
    for bot in (winner, loser):
        monkeypatch.setattr(bot.conversations, "one_writer", lambda *_args, **_kwargs: nullcontext())
    raced = []

    def meanwhile(_step: str) -> None:  # the winner answers turn 2 while the loser is on it
        if not raced:
            raced.append(winner.ask(thread, "What helps with sleep?"))

    with pytest.raises(TurnConflict, match="already recorded"):
        loser.ask(thread, "What are negative symptoms?", on_step=meanwhile)
    assert [t.user_message for t in winner.turn_log.turns(thread)] == [QUESTION, "What helps with sleep?"]
    assert [m.content for m in loser.messages(thread)][::2] == [QUESTION, "What helps with sleep?"]
    assert loser.ask(thread, "What are negative symptoms?").turn == 3
