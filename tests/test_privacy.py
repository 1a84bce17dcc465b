"""Privacy by default: private files, masked turn log, deleting and purging conversations from every
store, retention at start-up. Real SQLite, the real checkpointer and the real session throughout
(the fast fixture: hashing embedder and keyword identifier, no model load)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.main import cli
from app.core.privacy import mask, mask_record
from app.core.records import Identification, Judgement, TurnTrace

QUESTION = "Why does clozapine need regular blood tests?"
EMAIL, PHONE = "jane.doe+cafbot@example.co.uk", "+44 20 7946 0958"
PERSONAL = f"My email is {EMAIL} and my number is {PHONE}. {QUESTION}"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def public_umask():
    """The usual umask (files 0644, folders 0755): privacy must not depend on the user's umask."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def age(data_dir: Path, thread: str, days: float) -> None:
    """Move a conversation's creation and its turns `days` into the past, in the store's SQL."""
    when = (datetime.now(UTC) - timedelta(days=days)).isoformat()
    with sqlite3.connect(data_dir / "store.sqlite") as db:
        db.execute("UPDATE conversations SET created_at = ? WHERE thread_id = ?", (when, thread))
        db.execute("UPDATE turns SET created_at = ? WHERE thread_id = ?", (when, thread))


# -- file modes ----------------------------------------------------------------------------------
def test_every_data_file_is_0600_and_every_folder_0700_after_a_real_turn(fast_bot, tmp_path, public_umask):
    data = tmp_path / "nested" / "data"
    bot = fast_bot(data_dir=data)
    bot.ask(bot.new_thread(), QUESTION)
    store_files = ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm",
                   "conversations.sqlite", "conversations.sqlite-wal", "conversations.sqlite-shm"]
    for name in store_files:  # the WAL files exist: SQLite created them during the turn
        assert mode(data / name) == 0o600, name
    locks = list((data / "locks").glob("*.lock"))
    assert locks and all(mode(lock) == 0o600 for lock in locks)
    assert mode(data) == mode(data / "locks") == mode(tmp_path / "nested") == 0o700


def test_a_data_dir_left_public_by_an_older_cafbot_is_made_private_when_opened(fast_bot, tmp_path, public_umask):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    for name in ("store.sqlite", "store.sqlite-wal", "conversations.sqlite"):
        (data / name).touch(mode=0o644)
    fast_bot(data_dir=data)
    assert mode(data) == 0o700
    assert [mode(data / name) for name in ("store.sqlite", "store.sqlite-wal", "conversations.sqlite")] == [0o600] * 3


# -- masking ------------------------------------------------------------------------------------
@pytest.mark.parametrize("contact", [
    "jane.doe@example.com", "J_99+tag@mail-server.co.uk",
    "+44 20 7946 0958", "+44 (0)20 7946 0958", "0044 20 7946 0958", "+1 (202) 555-0143",
    "+1-800-273-8255", "+33 1 23 45 67 89", "+4915112345678", "+7 (495) 123-45-67",
    "(020) 7946 0958", "020 7946 0958", "07700 900123", "07700900123", "0800 123 4567",
    "202-555-0143", "202.555.0143", "(202) 555-0143", "1-800-273-8255", "2025550143",
])
def test_contact_details_are_masked(contact):
    masked = mask(f"you can reach me at {contact}, thanks")
    assert masked in ("you can reach me at [email], thanks", "you can reach me at [phone], thanks")


@pytest.mark.parametrize("text", [
    "I take 20 mg twice a day", "a range of 100-1000 mg", "in 2019 I took 400 mg", "see [S01] and [S11]",
    "since 2024-05-01", "since 01.05.2024", "since 01/05/2024", "since 01 05 2024", "between 1998 and 2004",
    "1998-2004", "123456", "0.5 mg at 10:30", "100 200 300 400", "1,000,000 people", "ICD-10 F20.0",
    "version 3.11.4", "2024-05-01 12 tablets", "5-10 mg", "not an email: a@b, @handle, foo@localhost",
])
def test_doses_dates_years_ids_and_short_numbers_are_not_masked(text):
    assert mask(text) == text


def test_masking_is_idempotent_and_leaves_identifiers_alone():
    trace = TurnTrace(thread_id="123456789012", user_message=PERSONAL, draft=f"Call {PHONE}.",
                      identification=Identification(outcome="clear", candidates=[], latency_ms=0.0,
                                                    parts=[f"mail {EMAIL}"]),
                      started_at="2024-05-01T10:30:00+00:00")
    masked = mask_record(trace)
    assert masked.thread_id == "123456789012" and masked.started_at == trace.started_at
    assert masked.identification.parts == ["mail [email]"] and masked.draft == "Call [phone]."
    assert mask_record(masked) == masked


def test_the_turn_log_is_masked_but_the_conversation_is_not(fast_bot, tmp_path):
    bot = fast_bot()
    thread = bot.new_thread()
    seen = bot.ask(thread, PERSONAL)
    assert EMAIL in seen.user_message  # what this turn returns is the user's own
    with sqlite3.connect(tmp_path / "data" / "store.sqlite") as db:
        row = db.execute("SELECT user_message, answer, trace FROM turns WHERE thread_id = ?",
                         (thread,)).fetchone()
    everything = " ".join(row)
    # the number as written, not a bare digit run: a latency float can hold any four digits
    assert EMAIL not in everything and "7946 0958" not in everything
    assert "[email]" in row[0] and "[phone]" in row[0]
    stored = json.loads(row[2])
    assert "[email]" in stored["user_message"] and "[email]" in " ".join(stored["identification"]["parts"])
    assert bot.messages(thread)[0].content == seen.user_message  # the checkpointer keeps the words


def test_a_crisis_message_is_masked_in_the_turn_log_everywhere(fast_bot, tmp_path):
    bot = fast_bot()
    thread = bot.new_thread()
    trace = bot.ask(thread, "i want to end my life tonight, tell my mum on 07700 900123")
    assert trace.route == "crisis"
    with sqlite3.connect(tmp_path / "data" / "store.sqlite") as db:
        stored = " ".join(db.execute("SELECT user_message, answer, trace FROM turns").fetchone())
    assert "900123" not in stored and "[phone]" in stored


def test_judges_quoted_evidence_is_masked():
    judgement = Judgement(judge="j", tier=0, verdict="warn", offending=[f"call {PHONE}"],
                          reason=f"quotes {EMAIL}")
    masked = mask_record(judgement)
    assert masked.offending == ["call [phone]"] and masked.reason == "quotes [email]"
    assert masked.judge == "j"


# -- cafbot conversations -----------------------------------------------------------------------
@pytest.fixture
def runner(tmp_path, monkeypatch) -> CliRunner:
    monkeypatch.setenv("CAFBOT_DATA_DIR", str(tmp_path / "data"))
    return CliRunner()


def two_conversations(fast_bot):
    bot = fast_bot()
    keep, gone = bot.new_thread(label="keep"), bot.new_thread(label="a [/] label")
    bot.ask(keep, QUESTION)
    bot.ask(gone, "[/] what are negative symptoms? [bold]")
    bot.ask(gone, PERSONAL)
    return bot, keep, gone


def test_list_shows_every_conversation_as_a_table_and_as_json(fast_bot, runner):
    bot, keep, gone = two_conversations(fast_bot)
    bot.close()
    table = runner.invoke(cli, ["conversations", "list"])
    assert table.exit_code == 0, table.output
    assert keep in table.output and gone in table.output and "a [/] label" in table.output
    listed = json.loads(runner.invoke(cli, ["conversations", "list", "--json"]).output)
    assert {c["thread_id"]: (c["turns"], c["label"], c["caf_mode"]) for c in listed} == {
        keep: (1, "keep", "on"), gone: (2, "a [/] label", "on")}


def test_show_prints_each_turn_escaped_and_masked(fast_bot, runner):
    _bot, _keep, gone = two_conversations(fast_bot)
    result = runner.invoke(cli, ["conversations", "show", gone])
    assert result.exit_code == 0, result.output
    assert "[/] what are negative symptoms? [bold]" in result.output  # printed, not read as markup
    assert "[email]" in result.output and EMAIL not in result.output
    assert "turn 2" in result.output and "answer" in result.output
    turns = json.loads(runner.invoke(cli, ["conversations", "show", gone, "--json"]).output)["turns"]
    assert [t["turn"] for t in turns] == [1, 2]


def test_an_unknown_thread_is_one_line_naming_it(runner):
    result = runner.invoke(cli, ["conversations", "show", "nosuch[/]thread"])
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "nosuch[/]thread" in result.stderr
    deleting = runner.invoke(cli, ["conversations", "delete", "nosuch", "--yes"])
    assert deleting.exit_code == 1 and "No conversation nosuch" in deleting.stderr


def test_delete_removes_the_conversation_from_every_store_after_confirmation(fast_bot, runner):
    bot, keep, gone = two_conversations(fast_bot)
    refused = runner.invoke(cli, ["conversations", "delete", gone], input="n\n")
    assert refused.exit_code == 1 and bot.messages(gone)  # not confirmed: kept
    result = runner.invoke(cli, ["conversations", "delete", gone], input="y\n")
    assert result.exit_code == 0, result.output
    assert bot.messages(gone) == [] and bot.turn_log.turns(gone) == [] and bot.turn_log.conversation(gone) is None
    assert bot.checkpointer.get_tuple({"configurable": {"thread_id": gone}}) is None
    assert len(bot.messages(keep)) == 2
    assert runner.invoke(cli, ["conversations", "delete", keep, "--yes"]).exit_code == 0
    assert bot.list_threads() == []


def test_purge_deletes_only_conversations_idle_for_longer_from_every_store(fast_bot, runner, tmp_path):
    bot, keep, gone = two_conversations(fast_bot)
    age(tmp_path / "data", gone, days=31)
    dry = runner.invoke(cli, ["conversations", "purge", "--older-than", "30d", "--dry-run"])
    assert "1 conversation(s)" in dry.output and bot.messages(gone)
    result = runner.invoke(cli, ["conversations", "purge", "--older-than", "30d"])
    assert result.exit_code == 0, result.output
    assert "Deleted 1 conversation(s)" in result.output
    assert bot.messages(gone) == [] and bot.turn_log.turns(gone) == []
    assert [c.thread_id for c in bot.list_threads()] == [keep]
    again = runner.invoke(cli, ["conversations", "purge", "--older-than", "1h"])
    assert "Deleted 0 conversation(s)" in again.output and len(bot.messages(keep)) == 2


@pytest.mark.parametrize("value", ["30", "30 days", "-1d", "0h", "1w", "d"])
def test_a_bad_age_is_one_line_naming_the_option(runner, value):
    result = runner.invoke(cli, ["conversations", "purge", "--older-than", value])
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "--older-than" in result.stderr


def test_the_conversations_commands_load_no_model_and_no_index(fast_bot, tmp_path):
    from tests.conftest import REPO

    bot, keep, _gone = two_conversations(fast_bot)
    bot.close()
    code = ("import sys; from typer.testing import CliRunner; from app.cli.main import cli; "
            f"r = CliRunner().invoke(cli, ['conversations', 'show', {keep!r}]); assert r.exit_code == 0, r.output; "
            "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'chromadb') if m in sys.modules); "
            "print(heavy); sys.exit(1 if heavy else 0)")
    env = {**os.environ, "CAFBOT_DATA_DIR": str(tmp_path / "data")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env)
    assert result.returncode == 0, result.stdout + result.stderr


# -- retention ----------------------------------------------------------------------------------
def test_retention_purges_idle_conversations_from_every_store_at_start_up(fast_bot, tmp_path):
    bot, keep, gone = two_conversations(fast_bot)
    bot.close()
    age(tmp_path / "data", gone, days=10)
    unlimited = fast_bot()  # no retention_days: everything kept
    assert {c.thread_id for c in unlimited.list_threads()} == {keep, gone}
    unlimited.close()
    fresh = fast_bot(retention_days=30)  # 10 days idle is within 30
    assert {c.thread_id for c in fresh.list_threads()} == {keep, gone}
    fresh.close()
    strict = fast_bot(retention_days=7)
    assert [c.thread_id for c in strict.list_threads()] == [keep]
    assert strict.messages(gone) == [] and strict.turn_log.turns(gone) == []
    assert len(strict.messages(keep)) == 2


# -- cafbot chat: /reset and /delete ------------------------------------------------------------
def test_chat_reset_keeps_the_old_conversation_and_delete_removes_it(fast_bot, monkeypatch):
    from app.cli import chat

    bot = fast_bot()
    monkeypatch.setattr(chat, "open_chatbot", lambda stack, profile: bot)
    result = CliRunner().invoke(cli, ["chat"], input=f"{QUESTION}\n/reset\n{QUESTION}\n/delete\ny\n/quit\n")
    assert result.exit_code == 0, result.output
    assert "cafbot conversations delete" in result.output and "Deleted conversation" in result.output
    threads = {c.thread_id: c.turns for c in bot.list_threads()}
    assert sorted(threads.values()) == [0, 1]  # the reset one kept; the deleted one gone; a new one
    (deleted,) = [line.split("Deleted conversation ")[1].split(".")[0]
                  for line in result.output.splitlines() if "Deleted conversation" in line]
    assert deleted not in threads and bot.messages(deleted) == []
