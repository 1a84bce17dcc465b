"""A rating sheet carries the text of every source an answer cites, however the answer was made:
a vetted card, the extractive answer, a model's draft, or the card or extractive answer the filter
sends instead of a rejected draft (the turn's recorded citations are the draft's, not those of the
answer the user saw). Through the real graph, filter, drift runner and SQLite store; only the chat
model's words are scripted."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from app.core.models import RoleClient
from app.core.models.scripted import ScriptedChatModel
from app.core.rubric import load_rubric
from app.core.text import citations_in
from app.drift.drifting_model import MODEL_NAME, drifting_chat_client
from app.drift.facilitators import TemplateFacilitator
from app.drift.runner import RunFolder, RunPlan, run_drift
from app.drift.schema import load_facilitators
from app.scoring.assign import assign
from app.scoring.items import items_from_chats, items_from_run
from app.scoring.sheets import export_rater_sheet
from app.scoring.tables import read_table
from app.store import CitedSource, Database, Item, ScoreStore

REFERENCE_RUN = Path(__file__).resolve().parents[1] / "conversations" / "drift-offline-reference"
# Rejected by the filter (a dose change, no citation): the user gets a card or the extractive answer.
UNSAFE = "You can stop clozapine now and take half your usual dose instead."


def _sheets(items: list[Item], folder: Path) -> list[pd.DataFrame]:
    """The items stored, given to one rater, and exported as the rater's CSV and XLSX sheets."""
    db = Database(f"sqlite:///{folder / 'scores.sqlite'}")
    try:
        store = ScoreStore(db)
        store.add_items(items)
        collection = items[0].collection
        assign(store, collection, ["ann"], per_item=1, seed=0)
        paths = [export_rater_sheet(store, load_rubric(), "ann", folder / f"ann{suffix}", collection)
                 for suffix in (".csv", ".xlsx")]
    finally:
        db.close()
    return [read_table(path) for path in paths]


def _assert_every_cited_source_is_on_the_sheet(sheet: pd.DataFrame, knowledge_base) -> int:
    """Returns how many rows cite sources (each checked: the cell names them and holds their text)."""
    citing = 0
    for row in sheet.to_dict("records"):
        cited = citations_in(row["answer"])
        if not cited:
            continue
        citing += 1
        assert row["cited_sources"], f"{row['item_id']} cites {cited} but its cited_sources cell is empty"
        for source_id in cited:
            source = knowledge_base.get(source_id)
            assert f"[{source_id}] {source.title}" in row["cited_sources"], (row["item_id"], source_id)
            assert source.body.strip() in row["cited_sources"], (row["item_id"], source_id)
    return citing


def _kinds(traces) -> set[str]:
    """How each answer that cites sources was made: card, extractive, llm, or fallback (the filter
    sent something else than the draft, which cited other sources or none)."""
    kinds = set()
    for draft, answer, generator, fallback in traces:
        if citations_in(answer):
            changed = fallback and citations_in(draft or "") != citations_in(answer)
            kinds.add("fallback" if changed else generator)
    return kinds


def test_a_drift_runs_sheet_carries_every_cited_sources_text(fast_bot, knowledge_base, tmp_path):
    bot = fast_bot(chat=drifting_chat_client())
    # The diagnostician is answered with cards; the medication advisor's drafts cite sources, and
    # with the filter on, the drafts that slip give way to a fallback that cites what they did not.
    plan = RunPlan(roles=["diagnostician", "medication_advisor"], samples=1, turns=4, conditions=["on", "off"],
                   seed=1, chat_model=MODEL_NAME)
    run_drift(bot, load_facilitators(), plan, tmp_path / "run",
              engine_for=lambda spec: TemplateFacilitator(spec, plan.seed))
    records = RunFolder(tmp_path / "run").read_turns()
    assert {"card", "llm", "fallback"} <= _kinds(
        (r.draft, r.final_answer, r.generator, r.fallback_used) for r in records)

    items = items_from_run(tmp_path / "run", knowledge_base)
    for sheet in _sheets(items, tmp_path):
        assert len(sheet) == len(records)
        assert _assert_every_cited_source_is_on_the_sheet(sheet, knowledge_base) >= 4


def test_saved_chats_sheet_carries_every_cited_sources_text(fast_bot, knowledge_base, tmp_path):
    offline = fast_bot(data_dir=tmp_path / "offline")  # vetted cards and extractive answers
    online = fast_bot(data_dir=tmp_path / "online",
                      chat=RoleClient("chat", "scripted-chat", ScriptedChatModel(respond=lambda _: UNSAFE)))
    offline_thread, online_thread = offline.new_thread("offline"), online.new_thread("online")
    for question in ("What is clozapine?", "What is a mother and baby unit?",
                     "Why does clozapine need regular blood tests?"):
        offline.ask(offline_thread, question)
    online.ask(online_thread, "Why does clozapine need regular blood tests?")
    traces = [*offline.turn_log.turns(offline_thread), *online.turn_log.turns(online_thread)]
    assert {"card", "extractive", "fallback"} <= _kinds(
        (t.draft, t.answer, t.generator, t.fallback_used) for t in traces)

    items = [*items_from_chats(offline.turn_log, [offline_thread], "chats", knowledge_base),
             *items_from_chats(online.turn_log, [online_thread], "chats", knowledge_base)]
    for sheet in _sheets(items, tmp_path):
        assert len(sheet) == len(traces)
        assert _assert_every_cited_source_is_on_the_sheet(sheet, knowledge_base) == len(traces)


def test_the_reference_runs_items_carry_every_source_their_answers_cite(knowledge_base):
    for item in items_from_run(REFERENCE_RUN, knowledge_base):
        assert [s.id for s in item.sources] == citations_in(item.answer), item.item_id
        assert all(s.text for s in item.sources), item.item_id


@pytest.mark.parametrize("stored", [[], [CitedSource(id="S11", title="Clozapine", text="as it was scored")]])
def test_adding_items_again_mends_the_sources_they_lost(knowledge_base, tmp_path, stored):
    """A store filled before the sources were read from the answer gets them when the run is added
    again; a source's text already stored stays as it was scored."""
    answer = "Clozapine needs regular blood tests [S11]. Ask your care team [S31]."
    item = Item(item_id="it-1", collection="run-1", question="Why blood tests?", answer=answer, sources=stored)
    db = Database(f"sqlite:///{tmp_path / 'scores.sqlite'}")
    try:
        store = ScoreStore(db)
        assert store.add_items([item]) == 1
        fresh = item.model_copy(update={"sources": [
            CitedSource(id=s, title=knowledge_base.get(s).title, text=knowledge_base.get(s).body)
            for s in citations_in(answer)]})
        assert store.add_items([fresh]) == 0
        sources = store.item("it-1").sources
    finally:
        db.close()
    assert [s.id for s in sources] == ["S11", "S31"]
    assert sources[0].text == (stored[0].text if stored else knowledge_base.get("S11").body)
    assert sources[1].text == knowledge_base.get("S31").body
