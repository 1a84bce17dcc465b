"""The scoring store on the real databases a team would use: SQLite in the data dir, and Postgres
(a server started for the test). Scores are kept the moment they are given, by any number of
writers at once; assignment is balanced, blind and reproducible."""

from __future__ import annotations

import itertools
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest
from sqlalchemy import create_engine, text

from app.core.errors import CafbotError
from app.scoring.assign import assign
from app.store import Database, Item, Score, ScoreConflict, ScoreStore, TurnLog
from tests.postgres import postgres_server

_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres_url():
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite'}"
    server = request.getfixturevalue("postgres_url")
    name = f"test_{next(_databases)}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as db:
        db.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return server.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture
def store(store_url):
    db = Database(store_url)
    yield ScoreStore(db)
    db.close()


def _items(n: int, collection: str = "run-1") -> list[Item]:
    return [Item(item_id=f"it-{i:03d}", collection=collection, question=f"question {i}?", answer=f"answer {i}",
                 hidden={"role": "therapist", "condition": "on" if i % 2 else "off", "turn": 1 + i % 4})
            for i in range(n)]


def test_items_are_added_once_and_read_back_whole(store):
    assert store.add_items(_items(5)) == 5
    assert store.add_items(_items(6)) == 1  # the five already there are not duplicated
    assert store.collections() == {"run-1": 6}
    back = store.item("it-003")
    assert back.question == "question 3?" and back.hidden["condition"] == "on"


def test_assignment_is_balanced_blind_reproducible_and_only_tops_up(store):
    store.add_items(_items(12))
    new = assign(store, "run-1", ["ann", "bob", "cy"], per_item=2, seed=7)
    assert new == {"ann": 8, "bob": 8, "cy": 8}  # 12 items x 2 raters, spread evenly
    per_item = Counter(a.item_id for a in store.assignments("run-1"))
    assert set(per_item.values()) == {2}
    orders = {r: [item.item_id for item, _ in store.queue(r)] for r in ("ann", "bob", "cy")}
    assert all(len(set(o)) == 8 for o in orders.values())
    assert orders["ann"] != sorted(orders["ann"])  # shuffled, not in the run's order
    assert {a.seed for a in store.assignments("run-1")} == {7}  # the seed is recorded

    again = assign(store, "run-1", ["ann", "bob", "cy"], per_item=2, seed=7)
    assert again == {"ann": 0, "bob": 0, "cy": 0}
    more = assign(store, "run-1", ["ann", "bob", "cy", "dee"], per_item=3, seed=7)
    assert sum(more.values()) == 12 and more["dee"] >= 3  # one more rater per item, the newcomer loaded first
    assert set(Counter(a.item_id for a in store.assignments("run-1")).values()) == {3}


def test_same_seed_same_plan(tmp_path):
    plans = []
    for n in range(2):
        store = ScoreStore(Database(f"sqlite:///{tmp_path / f's{n}.sqlite'}"))
        store.add_items(_items(9))
        assign(store, "run-1", ["ann", "bob"], per_item=1, seed=3)
        plans.append([(a.rater, a.item_id, a.position) for a in store.assignments("run-1")])
        store.db.close()
    assert plans[0] == plans[1]


def test_a_score_is_kept_at_once_and_changes_are_counted(store):
    store.add_items(_items(2))
    assign(store, "run-1", ["ann"], per_item=1, seed=0)
    store.save_score(Score(rater="ann", item_id="it-000", score=3, criteria={"faithful": True}, comment="ok"))
    changed = store.save_score(Score(rater="ann", item_id="it-000", score=2))
    assert changed.revisions == 1
    assert [(s.item_id, s.score, s.revisions) for s in store.scores("run-1")] == [("it-000", 2, 1)]
    queue = store.queue("ann")
    assert sum(score is not None for _item, score in queue) == 1
    with pytest.raises(CafbotError, match="not assigned"):
        store.save_score(Score(rater="zed", item_id="it-000", score=1))


def test_save_scores_writes_nothing_if_one_changed_since_it_was_read(store):
    store.add_items(_items(2))
    assign(store, "run-1", ["ann"], per_item=1, seed=0)
    first = store.save_score(Score(rater="ann", item_id="it-000", score=1))
    batch = [Score(rater="ann", item_id="it-001", score=4, via="sheet"),
             Score(rater="ann", item_id="it-000", score=0, via="sheet")]
    with pytest.raises(ScoreConflict):
        store.save_scores(batch, {("ann", "it-001"): None, ("ann", "it-000"): "an older time"})
    assert [(s.item_id, s.score) for s in store.scores()] == [("it-000", 1)]  # it-001 not written either
    assert store.save_scores(batch, {("ann", "it-001"): None, ("ann", "it-000"): first.scored_at}) == 2


def _score_many(url: str, rater: str, items: list[str]) -> int:
    db = Database(url)
    store = ScoreStore(db)
    for n, item in enumerate(items):
        store.save_score(Score(rater=rater, item_id=item, score=n % 5))
    db.close()
    return len(items)


def test_raters_writing_at_once_lose_nothing(store, store_url):
    store.add_items(_items(40))
    assign(store, "run-1", ["ann", "bob", "cy", "dee"], per_item=4, seed=1)
    ids = [item.item_id for item in store.items()]
    with ProcessPoolExecutor(max_workers=4) as pool:  # separate processes, as separate app servers would be
        done = list(pool.map(_score_many, [store_url] * 4, ["ann", "bob", "cy", "dee"], [ids] * 4))
    assert done == [40] * 4
    with ThreadPoolExecutor(max_workers=8) as pool:  # and threads of one process on the same score
        list(pool.map(lambda n: store.save_score(Score(rater="ann", item_id="it-000", score=n % 5)), range(16)))
    scores = store.scores()
    assert len(scores) == 160
    assert Counter(s.rater for s in scores) == {"ann": 40, "bob": 40, "cy": 40, "dee": 40}
    assert store.score("ann", "it-000").revisions == 16  # every change counted, none lost


def test_the_turn_log_shares_the_store(store):
    log = TurnLog(store.db)
    log.start_conversation("t-1", label="a chat")
    assert [c.thread_id for c in log.conversations()] == ["t-1"]
    assert log.turns("t-1") == [] and log.delete("t-1")
