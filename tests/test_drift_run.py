"""Drift runs through the real session (graph, filter, checkpointer, turn log) with the drifting
test model: CAF on against off, branching, concurrency, resumption and atomic records."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from app.core.errors import ConfigError
from app.drift.drifting_model import MODEL_NAME, drifting_chat_client
from app.drift.facilitators import TemplateFacilitator
from app.drift.runner import TURNS, RunFolder, RunPlan, run_drift
from app.drift.schema import load_facilitators
from app.drift.summary import summarise

ROLES = ["medication_advisor", "therapist"]


@pytest.fixture(scope="module")
def facilitators():
    return load_facilitators()


def plan(**changes) -> RunPlan:
    values = {"roles": ROLES, "samples": 2, "turns": 4, "conditions": ["on", "off"], "seed": 1,
              "chat_model": MODEL_NAME}
    return RunPlan(**{**values, **changes})


def run(bot, facilitators, the_plan, out, **options):
    return run_drift(bot, facilitators, the_plan, out, engine_for=lambda spec: TemplateFacilitator(spec, the_plan.seed),
                     **options)


def test_the_filter_raises_compliance_and_delays_drift_onset(fast_bot, facilitators, tmp_path):
    bot = fast_bot(chat=drifting_chat_client())
    manifest = run(bot, facilitators, plan(), tmp_path / "run", concurrency=4)
    assert manifest.complete and manifest.turns_done == 2 * 2 * 2 * 4
    summary = summarise(RunFolder(tmp_path / "run").read_turns())
    for role in ROLES:
        on, off = (next(g for g in summary.groups if g.role == role and g.condition == c) for c in ("on", "off"))
        assert on.share_compliant > off.share_compliant
        assert sum(on.survival) > sum(off.survival)  # later onset, or none
        assert off.drifted >= 1  # the drifting model does drift when nothing checks it


def test_every_branch_starts_from_the_same_checkpoint(fast_bot, facilitators, tmp_path):
    bot = fast_bot(chat=drifting_chat_client())
    manifest = run(bot, facilitators, plan(roles=["therapist"], turns=1), tmp_path / "run")
    spec = facilitators["therapist"]
    checkpoint = bot.messages(manifest.checkpoints["therapist"])
    assert len(checkpoint) == 2 * len(spec.checkpoint)
    written = [e.assistant for e in spec.checkpoint if e.assistant]
    assert all(any(m.content == text for m in checkpoint) for text in written)
    for key, thread in manifest.branches.items():
        assert bot.messages(thread)[: len(checkpoint)] == checkpoint, key
    assert len(set(manifest.branches.values())) == 2 * 2


def test_records_carry_what_scoring_and_summaries_need(fast_bot, facilitators, tmp_path):
    bot = fast_bot(chat=drifting_chat_client())
    manifest = run(bot, facilitators, plan(roles=["medication_advisor"], samples=1, turns=2), tmp_path / "run")
    records = RunFolder(tmp_path / "run").read_turns()
    assert {(r.condition, r.turn) for r in records} == {("on", 1), ("on", 2), ("off", 1), ("off", 2)}
    for record in records:
        assert record.chat_model == MODEL_NAME and record.user_message and record.final_answer
        assert record.engine == "template" and record.tactic
        assert record.thread_id == manifest.branches[f"medication_advisor/1/{record.condition}"]
    on = [r for r in records if r.condition == "on"]
    assert all("0" in r.verdicts_by_tier for r in on if r.route == "answer")
    assert all(not r.verdicts_by_tier for r in records if r.condition == "off")
    saved = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert saved["models"]["chat"] == MODEL_NAME and saved["knowledge_base_hash"] and saved["code_version"]
    assert saved["settings"]["models"]["chat"]["api_key"] in ("(unset)", "****(set)")


def test_concurrency_changes_nothing_but_the_speed(fast_bot, facilitators, tmp_path):
    bot = fast_bot(chat=drifting_chat_client())
    one = run(bot, facilitators, plan(turns=2), tmp_path / "one", concurrency=1)
    many = run(bot, facilitators, plan(turns=2), tmp_path / "many", concurrency=8)
    assert one.turns_done == many.turns_done == 16

    def said(folder):
        return {r.key: (r.user_message, r.final_answer) for r in RunFolder(folder).read_turns()}

    assert said(tmp_path / "one") == said(tmp_path / "many")


class Interrupted(Exception):
    pass


def test_an_interrupted_run_resumes_without_duplicate_or_lost_turns(fast_bot, facilitators, tmp_path):
    bot = fast_bot(chat=drifting_chat_client())
    out, seen = tmp_path / "run", []

    def crash_after_five(record):
        seen.append(record)
        if len(seen) == 5:
            raise Interrupted

    with pytest.raises(Interrupted):
        run(bot, facilitators, plan(), out, concurrency=1, on_turn=crash_after_five)
    partial = RunFolder(out).read_turns()
    assert len(partial) == 5 and not RunFolder(out).read_manifest().complete
    # a crash in the middle of writing a record leaves half a line; and a turn the chatbot answered
    # whose record was never written: both are repaired on resume
    lines = (out / TURNS).read_text().splitlines(keepends=True)
    (out / TURNS).write_text("".join(lines[:4]) + lines[4][:40])
    asked_before = sum(len(bot.conversations.turns(t)) for t in RunFolder(out).read_manifest().branches.values())

    manifest = run(bot, facilitators, plan(), out, concurrency=3)
    records = RunFolder(out).read_turns()
    assert manifest.complete and len(records) == manifest.turns_planned == 32
    assert len({r.key for r in records}) == 32  # no duplicates
    assert [r.tactic for r in records].count("recovered") == 1  # the fifth turn, read back from the turn log
    asked_after = sum(len(bot.conversations.turns(t)) for t in manifest.branches.values())
    checkpoint_turns = sum(len(facilitators[r].checkpoint) for r in ROLES) * 2 * 2
    assert asked_after - checkpoint_turns == 32  # the recovered turn was not asked again
    assert asked_after > asked_before
    per_thread = Counter(r.thread_id for r in records)
    assert set(per_thread.values()) == {4}


def test_the_same_folder_with_another_plan_is_refused(fast_bot, facilitators, tmp_path):
    bot = fast_bot(chat=drifting_chat_client())
    run(bot, facilitators, plan(roles=["therapist"], samples=1, turns=1), tmp_path / "run")
    with pytest.raises(ConfigError, match=r"another plan.*samples 1 there, 2 now"):
        run(bot, facilitators, plan(roles=["therapist"], samples=2, turns=1), tmp_path / "run")


def test_an_unknown_role_is_named(fast_bot, facilitators, tmp_path):
    bot = fast_bot(chat=drifting_chat_client())
    with pytest.raises(ConfigError, match="no facilitator astrologer"):
        run(bot, facilitators, plan(roles=["astrologer"]), tmp_path / "run")
