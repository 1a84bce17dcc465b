"""Past one machine: replicas (separate processes, separate data dirs) sharing one Postgres keep the
promises one process keeps, on one Postgres and one Chroma server. One writer per conversation, nothing lost, the turn log and the
conversation state turn by turn the same, a cold start and a server restart survived.

They need a real Postgres (pg_ctl) and Chroma's server; without them they skip, unless
CAFBOT_TEST_REQUIRE_POSTGRES=1 (or CAFBOT_TEST_REQUIRE_CHROMA=1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from bench.replica import QUESTIONS, Replica
from tests.chroma_server import chroma_server
from tests.postgres import PostgresServer, postgres_cluster

pytestmark = pytest.mark.slow


@pytest.fixture
def postgres():
    with postgres_cluster() as server:
        yield server


@pytest.fixture(scope="module")
def shared_index(tmp_path_factory):
    """A Chroma server holding the default knowledge base's index, built once by `cafbot kb index`."""
    with chroma_server() as url:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("CAFBOT_")}
        built = subprocess.run([str(Path(sys.executable).with_name("cafbot")), "kb", "index"], capture_output=True,
                               text=True, timeout=600, cwd=tmp_path_factory.mktemp("index-job"),
                               env={**environment, "CAFBOT_RETRIEVAL__CHROMA_URL": url})
        assert built.returncode == 0, built.stderr
        yield url


@contextmanager
def replicas(tmp_path: Path, server: PostgresServer, count: int, lock_timeout_s: float = 60.0,
             chroma_url: str | None = None):
    """`count` replica processes on `server`; on the real embedder and the index on `chroma_url`
    if given, else on the fast fakes."""
    with ExitStack() as stack:
        started = []
        for n in range(count):  # started together: their migrations race, unless they wait for each other
            settings = {"data_dir": tmp_path / f"replica-{n}", "store_url": server.url,
                        "turn_lock_timeout_s": lock_timeout_s,
                        "checkpointer": {"kind": "postgres", "postgres_url": server.libpq_url}}
            if chroma_url:
                settings["retrieval"] = {"chroma_url": chroma_url}
            replica = Replica(settings, fast=chroma_url is None)
            stack.callback(replica.close)
            started.append(replica)
        for replica in started:
            replica.wait_ready()
        yield started


def stores_agree(server: PostgresServer, thread: str) -> list[tuple[str, str]]:
    """The turn log's exchanges, after checking that the conversation state holds exactly them."""
    from app.core.config import Settings
    from app.session import Conversations

    settings = Settings(data_dir=Path("reader"), store_url=server.url,
                        checkpointer={"kind": "postgres", "postgres_url": server.libpq_url})
    with Conversations(settings) as conversations:
        logged = [(t.user_message, t.answer) for t in conversations.turns(thread)]
        saved = conversations.checkpointer.get_tuple({"configurable": {"thread_id": thread}})
        messages = saved.checkpoint["channel_values"]["messages"] if saved else []
    state = [(messages[i].content, messages[i + 1].content) for i in range(0, len(messages), 2)]
    assert state == logged, "the conversation state and the turn log disagree"
    return logged


def test_two_replicas_answering_one_conversation_at_once_lose_nothing(tmp_path, postgres, shared_index):
    """Ten rounds of both replicas (the real embedder, one Chroma server) asking in one
    conversation at the same moment: each turn is answered and recorded in both stores, or refused
    as busy; never a state holding an answer nobody saw. A short lock wait makes both outcomes
    happen."""
    with replicas(tmp_path, postgres, 2, lock_timeout_s=0.05, chroma_url=shared_index) as (first, second):
        thread = first.new_thread("race")
        with ThreadPoolExecutor(2) as both:
            outcomes = [outcome for round_ in range(10) for outcome in both.map(
                lambda replica, name, n=round_: replica.ask(thread, f"{QUESTIONS[n % len(QUESTIONS)]} ({name}, {n})"),
                (first, second), ("first", "second"))]
    refused = [o for o in outcomes if "error" in o]
    answered = [o for o in outcomes if "error" not in o]
    assert all(o["error"] == "ConversationBusy" and "busy" in o["message"] for o in refused), refused
    assert len(answered) >= 10 and sorted(o["turn"] for o in answered) == list(range(1, len(answered) + 1))
    logged = stores_agree(postgres, thread)
    assert [answer for _, answer in logged] == [o["answer"] for o in sorted(answered, key=lambda o: o["turn"])]


def test_replicas_starting_together_on_an_empty_database_all_come_up(tmp_path, postgres):
    with replicas(tmp_path, postgres, 3) as started:
        thread = started[0].new_thread("cold start")
        for n, replica in enumerate(started):
            assert "error" not in replica.ask(thread, QUESTIONS[n])
    assert len(stores_agree(postgres, thread)) == 3


def test_a_postgres_restart_under_a_serving_replica_costs_only_the_turns_while_it_is_down(tmp_path, postgres):
    with replicas(tmp_path, postgres, 1) as (replica,):
        thread = replica.new_thread("restart")
        assert "error" not in replica.ask(thread, QUESTIONS[0])
        postgres.stop()
        during = replica.ask(thread, QUESTIONS[1])
        assert during["error"] == "TurnFailed" and "try again" in during["message"], during
        assert len(during["message"].splitlines()) == 1
        postgres.start()
        after = [replica.ask(thread, question) for question in QUESTIONS[2:4]]
    assert [o.get("turn") for o in after] == [2, 3], after
    assert [question for question, _ in stores_agree(postgres, thread)] == [QUESTIONS[0], *QUESTIONS[2:4]]


def test_an_older_shared_store_is_upgraded_by_cafbot_migrate_not_by_a_replica(tmp_path, postgres):
    from sqlalchemy import text

    from app.store import Database, StoreError
    from app.store.database import MIGRATIONS

    with ExitStack() as stack:
        store = Database(postgres.url)
        stack.callback(store.close)
        with store.engine.begin() as db:  # as a store left by the cafbot before the last migration
            db.execute(text("DROP TABLE sign_in_failures"))
            db.execute(text("DELETE FROM schema_version WHERE version = (SELECT max(version) FROM schema_version)"))
    with pytest.raises(StoreError, match=r"run `cafbot migrate`") as refused:
        Database(postgres.url)
    assert "move it aside" not in str(refused.value) and "postgres@127.0.0.1" in str(refused.value)
    settings = {"CAFBOT_STORE_URL": postgres.url, "CAFBOT_CHECKPOINTER__KIND": "postgres",
                "CAFBOT_CHECKPOINTER__POSTGRES_URL": postgres.libpq_url, "CAFBOT_DATA_DIR": str(tmp_path / "data")}
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CAFBOT_")}

    def cafbot(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(Path(sys.executable).with_name("cafbot")), *args], capture_output=True,
                              text=True, timeout=120, env={**environment, **settings}, cwd=tmp_path)

    def doctor() -> dict[str, dict]:
        return {c["name"]: c for c in json.loads(cafbot("doctor", "--json").stdout)["checks"]}

    before = doctor()
    assert before["store"]["status"] == "FAIL" and before["store"]["fix"] == "`cafbot migrate`", before["store"]
    result = cafbot("migrate")
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout
    after = doctor()
    assert after["store"]["status"] == after["conversations"]["status"] == "ok", (after["store"], after["conversations"])
    upgraded = Database(postgres.url)
    assert upgraded.version == len(MIGRATIONS)
    upgraded.close()
