"""Store and configuration errors are one line naming the file (and line) with the fix, never a
traceback; a damaged index is repaired by `cafbot kb index --rebuild`; data printed through rich is
escaped. Through the real CLI (typer's runner), with the hashing embedder and the keyword
identifier standing in for MiniLM and the full index."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from app.cli.main import cli
from app.core.config import Settings, setting_variables, unknown_variables
from app.core.errors import ConfigError
from tests.test_retrieval_index import settings_for, small_kb, write_source


def run(*args: str, env: dict[str, str] | None = None):
    result = CliRunner().invoke(cli, list(args), env=env)
    assert "Traceback" not in result.output, result.output
    return result


def error_line(result) -> str:
    """The command failed with exactly one line, `error: ...`."""
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.fixture
def fast_services(monkeypatch):
    """`cafbot ask` and `kb index` with the hashing embedder and, for ask, the keyword identifier."""
    from app.graph.services import Services
    from app.kb import load_knowledge_base
    from tests.fakes import HashingEmbedder, KeywordIdentifier

    original = Services.from_settings

    def from_settings(settings, **overrides):
        kb = load_knowledge_base(settings.knowledge_base)
        return original(settings, embedder=HashingEmbedder(), identifier=KeywordIdentifier(kb))

    monkeypatch.setattr(Services, "from_settings", from_settings)
    monkeypatch.setattr("app.core.embeddings.Embedder", HashingEmbedder)


# -- configuration --------------------------------------------------------------------------------
def test_bad_toml_is_one_line_naming_the_file_and_line(tmp_path):
    (tmp_path / "cafbot.toml").write_text('profile = "offline"\n[caf]\ntiers = = [0]\n', encoding="utf-8")
    line = error_line(run("config", "show"))
    assert "cafbot.toml:3: invalid TOML" in line and "column" in line


def test_unclosed_toml_at_the_end_still_names_a_line(tmp_path):
    (tmp_path / "cafbot.toml").write_text('profile = "offline"\n[caf]\ntiers = [0, 1\n', encoding="utf-8")
    assert "cafbot.toml:3: invalid TOML: Unclosed array" in error_line(run("config", "show"))


def test_a_missing_cafbot_config_file_is_an_error(tmp_path):
    line = error_line(run("config", "show", env={"CAFBOT_CONFIG": str(tmp_path / "nope.toml")}))
    assert f"CAFBOT_CONFIG={tmp_path / 'nope.toml'}: no such file" in line


def test_a_named_config_file_is_read(tmp_path):
    (tmp_path / "elsewhere.toml").write_text('profile = "local"\n', encoding="utf-8")
    result = run("config", "show", env={"CAFBOT_CONFIG": str(tmp_path / "elsewhere.toml")})
    assert result.exit_code == 0 and '"profile": "local"' in result.output


def test_a_misspelt_variable_is_an_error_with_a_suggestion():
    line = error_line(run("config", "show", env={"CAFBOT_MODELS__JUGDE__MODEL": "gpt-4o"}))
    assert "CAFBOT_MODELS__JUGDE__MODEL" in line and "did you mean CAFBOT_MODELS__JUDGE__MODEL?" in line
    assert "did you mean CAFBOT_DATA_DIR?" in error_line(run("config", "show", env={"CAFBOT_DATADIR": "x"}))


def test_real_nested_variables_and_the_test_switches_are_allowed(monkeypatch):
    for name, value in {"CAFBOT_MODELS__JUDGE__MODEL": "m", "CAFBOT_CAF__TIERS": "[0, 1]",
                        "CAFBOT_LOCAL_SERVER__PORT": "8800", "CAFBOT_TEST_LLAMA_PORT": "8799",
                        "cafbot_profile": "offline"}.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.caf.tiers == [0, 1] and settings.models.judge.model == "m"
    assert settings.local_server.port == 8800
    assert {"CAFBOT_RETRIEVAL__TOP_K", "CAFBOT_MODELS__CHAT", "CAFBOT_CRISIS_CONTACTS"} <= setting_variables()
    assert unknown_variables({"CAFBOT_TEST_ANYTHING": "1", "HOME": "/root", "CAFBOT_CONFIG": "x"}) == []


def test_dotenv_unknown_keys_are_named_with_their_line_and_foreign_keys_ignored(tmp_path):
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-x\nCAFBOT_PROFILE=local\n", encoding="utf-8")
    assert Settings().profile == "local"  # another program's key in .env is not ours to refuse
    (tmp_path / ".env").write_text("# settings\nCAFBOT_PROFIL=local\n", encoding="utf-8")
    line = error_line(run("config", "show"))
    assert "CAFBOT_PROFIL (.env:2)" in line and "did you mean CAFBOT_PROFILE?" in line


def test_an_invalid_value_names_the_toml_file_and_line(tmp_path):
    (tmp_path / "cafbot.toml").write_text('profile = "offline"\n\n[caf]\ntiers = [0, 7]\n', encoding="utf-8")
    line = error_line(run("config", "show"))
    assert "cafbot.toml:4: caf.tiers.1: Input should be 0, 1 or 2" in line


def test_an_invalid_value_names_its_environment_variable():
    line = error_line(run("config", "show", env={"CAFBOT_LOCAL_SERVER__PORT": "99999"}))
    assert "environment variable CAFBOT_LOCAL_SERVER__PORT: local_server.port" in line
    line = error_line(run("config", "show", env={"CAFBOT_CAF__TIERS": "not json"}))
    assert "CAFBOT_CAF__TIERS='[0, 1]'" in line


def test_config_errors_raise_config_error_in_the_library_too(tmp_path, monkeypatch):
    monkeypatch.setenv("CAFBOT_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="no such file"):
        Settings()


def test_error_text_is_escaped_not_read_as_markup(tmp_path):
    """A message quoting a path with rich markup in it is printed as written, without crashing the
    error printer itself."""
    missing = tmp_path / "odd[/]name[bold].toml"
    line = error_line(run("config", "show", env={"CAFBOT_CONFIG": str(missing)}))
    assert "odd[/]name[bold].toml" in line


def test_long_errors_stay_on_one_line_in_a_narrow_terminal(tmp_path):
    deep = tmp_path / ("x" * 150) / "cafbot.toml"
    result = CliRunner().invoke(cli, ["config", "show"], env={"CAFBOT_CONFIG": str(deep), "COLUMNS": "40"})
    assert str(deep) in error_line(result)


# -- the stores -----------------------------------------------------------------------------------
def test_a_corrupt_conversation_store_is_one_line_naming_the_file(tmp_path, fast_services):
    data = tmp_path / "data"
    data.mkdir()
    (data / "conversations.sqlite").write_bytes(b"this is not a database\n" * 200)
    line = error_line(run("ask", "What is clozapine?", env={"CAFBOT_DATA_DIR": str(data)}))
    assert f"{data / 'conversations.sqlite'}: cannot open the conversation store" in line
    assert "file is not a database" in line and "mv " in line


def test_a_conversation_store_damaged_past_its_first_page_is_one_line_too(tmp_path, fast_services):
    """The schema reads fine, so the damage shows only when the conversation is read."""
    data = tmp_path / "data"
    env = {"CAFBOT_DATA_DIR": str(data)}
    first = run("ask", "What is clozapine?", "--json", env=env)
    assert first.exit_code == 0, first.output
    thread = json.loads(first.output)["thread_id"]
    store = data / "conversations.sqlite"
    damaged = bytearray(store.read_bytes())
    damaged[4096:] = b"\xff" * (len(damaged) - 4096)
    store.write_bytes(bytes(damaged))
    line = error_line(run("ask", "And its side effects?", "--thread", thread, env=env))
    assert f"{store}: cannot read or write the conversation store (database disk image is malformed)" in line


def test_a_corrupt_turn_store_is_one_line_naming_the_file(tmp_path, fast_services):
    data = tmp_path / "data"
    data.mkdir()
    (data / "store.sqlite").write_bytes(b"garbage" * 1000)
    line = error_line(run("ask", "What is clozapine?", env={"CAFBOT_DATA_DIR": str(data)}))
    assert f"{data / 'store.sqlite'}: cannot open the store" in line


def test_a_database_error_that_names_no_file_is_one_line_pointing_to_doctor(capsys):
    import typer
    from sqlalchemy.exc import DatabaseError

    from app.cli.common import friendly_errors

    @friendly_errors
    def command() -> None:
        raise DatabaseError("SELECT 1", {}, sqlite3.DatabaseError("database disk image is malformed"))

    with pytest.raises(typer.Exit):
        command()
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "database disk image is malformed" in lines[0] and "cafbot doctor" in lines[0]


def test_open_checkpointer_names_the_file(tmp_path):
    from app.graph.checkpoint import open_checkpointer
    from app.store import StoreError

    settings = Settings(data_dir=tmp_path)
    settings.checkpoint_path.write_bytes(b"\0garbage" * 512)
    with pytest.raises(StoreError, match=r"conversations\.sqlite: cannot open"), open_checkpointer(settings):
        pass
    settings.checkpoint_path.unlink()
    with open_checkpointer(settings) as saver:  # a fresh file works
        assert saver is not None
    with sqlite3.connect(settings.checkpoint_path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# -- the index ------------------------------------------------------------------------------------
def test_a_corrupt_index_names_the_repair_and_rebuild_repairs_it(tmp_path, fast_services):
    kb = small_kb(tmp_path / "kb")
    env = {"CAFBOT_DATA_DIR": str(tmp_path / "data"), "CAFBOT_KNOWLEDGE_BASE": str(kb)}
    assert run("kb", "index", env=env).exit_code == 0
    index_db = tmp_path / "data" / "index" / "chroma.sqlite3"
    index_db.write_bytes(b"\x13garbage" * 4096)

    line = error_line(run("kb", "index", env=env))
    assert str(tmp_path / "data" / "index") in line and "`cafbot kb index --rebuild`" in line

    rebuilt = run("kb", "index", "--rebuild", env=env)
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "Removed the damaged index folder" in rebuilt.output and "added 5" in rebuilt.output
    again = run("kb", "index", env=env)
    assert again.exit_code == 0 and "unchanged 5" in again.output


def test_an_index_another_process_is_writing_to_is_busy_not_damaged(tmp_path):
    """SQLite's "database is locked" (as Chroma raises it while another connection writes) does not
    say "Rebuild it", which would throw away the other writer's work: the index is busy, not
    damaged. A write is tried again while the lock lasts."""
    from app.retrieval.chroma_store import IndexBusy, reading_index
    from app.retrieval.chroma_store import while_locked as _while_locked

    settings = settings_for(tmp_path, small_kb(tmp_path / "kb"))
    with pytest.raises(IndexBusy) as raised, reading_index(settings):
        raise RuntimeError("error returned from database: (code: 5) database is locked")
    line = str(raised.value)
    assert str(settings.index_dir) in line and "busy" in line and "rebuild" not in line.lower(), line
    attempts = []

    def write():
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("database is locked")
        return "written"

    assert _while_locked(write) is None and len(attempts) == 3
    with pytest.raises(RuntimeError, match="locked"):
        _while_locked(lambda: (_ for _ in ()).throw(RuntimeError("database is locked")), retries=2)


def test_rebuild_of_a_healthy_index_drops_only_its_collection(tmp_path, fast_services):
    one, two = small_kb(tmp_path / "one"), tmp_path / "two"
    write_source(two, "B01", "Other", "Something else.", ["other"], "Entirely different content here.")
    data = str(tmp_path / "data")
    for kb in (one, two):
        assert run("kb", "index", env={"CAFBOT_DATA_DIR": data, "CAFBOT_KNOWLEDGE_BASE": str(kb)}).exit_code == 0
    rebuilt = run("kb", "index", "--rebuild", env={"CAFBOT_DATA_DIR": data, "CAFBOT_KNOWLEDGE_BASE": str(one)})
    assert "Rebuilt the index of" in rebuilt.output and "added 5" in rebuilt.output
    other = run("kb", "index", env={"CAFBOT_DATA_DIR": data, "CAFBOT_KNOWLEDGE_BASE": str(two)})
    assert "unchanged 1" in other.output  # the other knowledge base's collection was kept


def test_an_index_path_that_is_a_file_is_repaired_by_rebuild(tmp_path, fast_services):
    kb = small_kb(tmp_path / "kb")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "index").write_text("not a folder")
    env = {"CAFBOT_DATA_DIR": str(tmp_path / "data"), "CAFBOT_KNOWLEDGE_BASE": str(kb)}
    assert "kb index --rebuild" in error_line(run("kb", "index", env=env))
    assert run("kb", "index", "--rebuild", env=env).exit_code == 0


# -- rich markup in data --------------------------------------------------------------------------
def test_a_title_with_markup_is_printed_as_written_by_kb_check(tmp_path):
    kb = small_kb(tmp_path / "kb")
    write_source(kb, "A09", "Voices [/] and [bold]sleep", "A title with brackets.", ["brackets"], "Body text here.")
    result = CliRunner().invoke(cli, ["kb", "check", str(kb)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Voices [/] and [bold]sleep" in result.output


def test_ask_prints_a_title_with_markup(tmp_path, fast_services):
    kb = small_kb(tmp_path / "kb")
    write_source(kb, "A02", "Clozapine [/] blood tests", "Why clozapine needs regular blood tests.",
                 ["clozapine", "blood tests"], "Clozapine can lower the number of white blood cells. "
                 "Blood tests are weekly at first and less often later.")
    env = {"CAFBOT_DATA_DIR": str(tmp_path / "data"), "CAFBOT_KNOWLEDGE_BASE": str(kb), "COLUMNS": "200"}
    result = run("ask", "why does clozapine need blood tests?", "--caf", "off", env=env)
    assert result.exit_code == 0, result.output
    assert "Clozapine [/] blood tests" in result.output


def test_render_escapes_every_field():
    from rich.console import Console

    from app.cli import render
    from app.core.records import Candidate, Identification, TurnTrace

    trace = TurnTrace.model_construct(
        turn=1, route="answer", generator="extractive", total_ms=1.0, nodes=[], model_calls=[],
        caf=None, errors=["odd [/] error"], dropped_sources=["[bold]"], citations=["S1"],
        prompt_sources=["S1"], answer="An answer [S1].",
        identification=Identification(outcome="clear", parts=["q [/]"], latency_ms=1.0, candidates=[
            Candidate(source_id="S1", title="Title [/] with [red]markup", confidence=0.9, part="q [/]")]))
    console = Console(record=True, width=200)
    original = render.console
    try:
        render.console = console
        render.show_answer(trace)
        render.show_sources(trace)
        render.show_trace(trace)
    finally:
        render.console = original
    text = console.export_text()
    assert "Title [/] with [red]markup" in text and "odd [/] error" in text and "dropped source [bold]" in text
