"""Past one machine: replicas (separate processes, separate data dirs) sharing one Postgres keep the
promises one process keeps. One writer per conversation, nothing lost, the turn log and the
conversation state turn by turn the same, a cold start and a server restart survived.

They need a real Postgres (pg_ctl); without one they skip, unless CAFBOT_TEST_REQUIRE_POSTGRES=1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.postgres import PostgresServer, postgres_cluster

pytestmark = pytest.mark.slow

QUESTIONS = ["What helps with sleep?", "What are negative symptoms?", "How can family members help?",
             "What is clozapine?", "What are the early warning signs of relapse?"]


@pytest.fixture
def postgres():
    with postgres_cluster() as server:
        yield server


class Replica:
    """A replica process, spoken to one JSON line at a time."""

    def __init__(self, data_dir: Path, server: PostgresServer, lock_timeout_s: float):
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "replica.py"), str(data_dir), server.libpq_url, server.url,
             str(lock_timeout_s)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_ready(self) -> None:
        assert self._read() == {"ready": True}

    def send(self, **command) -> None:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def ask(self, thread: str, text: str) -> dict:
        self.send(ask=[thread, text])
        return self._read()

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=30)
            raise AssertionError(f"the replica exited ({self.process.returncode}): {self.process.stderr.read()[-3000:]}")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


@contextmanager
def replicas(tmp_path: Path, server: PostgresServer, count: int, lock_timeout_s: float = 60.0):
    with ExitStack() as stack:
        started = []
        for n in range(count):  # started together: their migrations race, unless they wait for each other
            replica = Replica(tmp_path / f"replica-{n}", server, lock_timeout_s)
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


def test_two_replicas_answering_one_conversation_at_once_lose_nothing(tmp_path, postgres):
    """Ten rounds of both replicas asking in one conversation at the same moment: each turn is
    answered and recorded in both stores, or refused as busy; never a state holding an answer
    nobody saw. A short lock wait makes both outcomes happen."""
    with replicas(tmp_path, postgres, 2, lock_timeout_s=0.05) as (first, second):
        first.send(new="race")
        thread = first._read()["thread"]
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
        started[0].send(new="cold start")
        thread = started[0]._read()["thread"]
        for n, replica in enumerate(started):
            assert "error" not in replica.ask(thread, QUESTIONS[n])
    assert len(stores_agree(postgres, thread)) == 3


def test_a_postgres_restart_under_a_serving_replica_costs_only_the_turns_while_it_is_down(tmp_path, postgres):
    with replicas(tmp_path, postgres, 1) as (replica,):
        replica.send(new="restart")
        thread = replica._read()["thread"]
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
    result = subprocess.run([str(Path(sys.executable).with_name("cafbot")), "migrate"], capture_output=True,
                            text=True, timeout=120, env={**environment, **settings})
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout
    upgraded = Database(postgres.url)
    assert upgraded.version == len(MIGRATIONS)
    upgraded.close()
