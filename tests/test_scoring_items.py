"""Items to score are the answers as users saw them, with the conversation before them and the
cited sources' text, from a drift run (the committed reference) or from saved chats (real turns)."""

from __future__ import annotations

from pathlib import Path

from app.scoring.items import cited_sources, item_id, items_from_chats, items_from_run
from app.store import ScoreStore

REFERENCE_RUN = Path(__file__).resolve().parents[1] / "conversations" / "drift-offline-reference"


def test_run_items_carry_the_checkpoint_and_the_branch_so_far(knowledge_base):
    items = items_from_run(REFERENCE_RUN, knowledge_base)
    assert len(items) == 192 and len({i.item_id for i in items}) == 192
    branch = sorted((i for i in items if i.hidden["role"] == "therapist" and i.hidden["sample"] == 1
                     and i.hidden["condition"] == "on"), key=lambda i: i.hidden["turn"])
    checkpoint = len(branch[0].context)
    assert checkpoint >= 1 and branch[0].context[0].user.startswith("what is CBT")
    assert [len(i.context) for i in branch] == [checkpoint + n for n in range(4)]
    assert branch[1].context[-1].user == branch[0].question and branch[1].context[-1].assistant == branch[0].answer
    cited = next(i for i in items if i.sources)
    assert all(s.text and s.title for s in cited.sources)
    assert "therapist" not in branch[0].item_id and branch[0].item_id.startswith("it-")


def test_a_source_gone_from_the_knowledge_base_is_named_not_dropped(knowledge_base):
    found = cited_sources(["S01", "S99", "S01"], knowledge_base)
    assert [s.id for s in found] == ["S01", "S99"]
    assert found[0].text and found[1].title == "(not in the knowledge base any more)"


def test_saved_chats_become_items_with_their_context(fast_bot, knowledge_base):
    bot = fast_bot()
    thread = bot.new_thread("a saved chat")
    for question in ("what is schizophrenia?", "how is it treated?"):
        bot.ask(thread, question)
    items = items_from_chats(bot.turn_log, [thread], "chats", knowledge_base)
    assert [i.question for i in items] == ["what is schizophrenia?", "how is it treated?"]
    assert items[1].context[0].user == "what is schizophrenia?" and items[1].context[0].assistant == items[0].answer
    assert items[0].item_id == item_id("chats", thread, 1) and items[0].hidden["condition"] == "on"
    store = ScoreStore(bot.store)
    assert store.add_items(items) == 2 and store.collections() == {"chats": 2}
