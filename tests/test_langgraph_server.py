"""LangGraph's own server answers as the chatbot does: `langgraph dev` on the repository's
langgraph.json, started for real on a loopback port (no --allow-blocking, strict checkpoint
reading) with its data in a temporary folder, asked through its HTTP API.

Without langgraph-cli's in-memory server (the `dev` extra) these tests skip, unless
CAFBOT_TEST_REQUIRE_LANGGRAPH=1 (CI)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from app.store import Database, TurnLog
from bench.bench_server import (
    SMALLEST,
    ServerFailed,
    ask_server,
    compare,
    langgraph_command,
    langgraph_server,
    new_thread,
    table,
)
from tests.servers import unavailable

pytestmark = pytest.mark.slow

REQUIRE = "CAFBOT_TEST_REQUIRE_LANGGRAPH"
WAIT_S = 600  # the first run in the module waits for the server to build its services


def _unavailable(reason: str) -> None:
    unavailable(REQUIRE, reason)


@dataclass
class Server:
    url: str
    data_dir: Path


@pytest.fixture(scope="module")
def langgraph() -> None:
    """Asked for first, so that a missing server skips before the index is built."""
    if langgraph_command() is None:
        _unavailable("langgraph-cli is not installed with its in-memory server (pip install -e '.[dev]')")


@pytest.fixture(scope="module")
def server(langgraph, tmp_path_factory, shared_data_dir, default_identifier) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("langgraph-server")
    data_dir = folder / "data"
    shutil.copytree(shared_data_dir / "index", data_dir / "index")  # the session's index, built once
    with langgraph_server(data_dir, folder / "work") as url:
        yield Server(url, data_dir)


@pytest.fixture
def client(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url) as http:
        yield http


def test_a_follow_up_sent_as_messages_is_read_with_the_question_before_it(client):
    """LangGraph's usual input, as its clients send it (the second message as content blocks, with
    the client's own id); the answer comes back as the conversation's last message."""
    thread = new_thread(client)
    first = ask_server(client, thread, {"messages": [{"role": "user", "content": "What is clozapine?"}]},
                       timeout_s=WAIT_S)
    second = ask_server(client, thread, {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "is it safe with alcohol?"}], "id": "q2"}]},
        timeout_s=WAIT_S)
    trace = second["trace"]
    assert "clozapine" in trace["resolved_question"], trace["resolved_question"]
    assert trace["route"] == "answer" and {"S20", "S11"} & set(trace["citations"]), trace["answer"]
    said = [(m["type"], m["content"]) for m in second["messages"]]
    assert said == [("human", "What is clozapine?"), ("ai", first["trace"]["answer"]),
                    ("human", "is it safe with alcohol?"), ("ai", trace["answer"])]
    assert second["messages"][2]["id"] == "q2"  # the client's copy is replaced, not shown twice


def test_every_turn_is_in_the_turn_log_masked_and_the_filter_mode_is_the_requests(client, server):
    thread = new_thread(client)
    message = "thanks! you can write to me at jo.bloggs@example.com"
    values = ask_server(client, thread, {"user_input": message}, context={"caf": "tier0"}, timeout_s=WAIT_S)
    assert values["trace"]["caf_mode"] == "tier0" and values["trace"]["thread_id"] == thread
    assert values["messages"][0]["content"] == message  # the conversation keeps the user's words
    db = Database.open(server.data_dir)
    try:
        turns = TurnLog(db).turns(thread)
    finally:
        db.close()
    assert [(t.turn, t.user_message) for t in turns] == [(1, "thanks! you can write to me at [email]")]
    assert turns[0].answer == values["trace"]["answer"]


def test_a_mistyped_filter_mode_fails_the_run_and_says_which_modes_there_are(client):
    thread = new_thread(client)
    with pytest.raises(ServerFailed, match="caf must be one of on, off, tier0"):
        ask_server(client, thread, {"user_input": "What is clozapine?"}, context={"caf": "of"}, timeout_s=WAIT_S)


def test_the_server_benchmark_at_its_smallest_gets_the_same_answers_on_both_sides(
        server, embedder, shared_data_dir):
    result = compare(SMALLEST, url=server.url, embedder=embedder, index=shared_data_dir / "index")
    assert len(result["in_process"]) == len(result["server"]) == SMALLEST
    assert [r["trace"]["answer"] for r in result["server"]] == \
        [r["trace"]["answer"] for r in result["in_process"]]
    assert all(served > 0 and (local is None or local > 0) for _measure, local, served in table(result))
