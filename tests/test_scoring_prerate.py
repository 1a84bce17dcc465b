"""AI pre-rating: the judge model rates each item on the raters' rubric, blind; its ratings are
stored under its name and only compared with human scores (the model's words are scripted)."""

from __future__ import annotations

import pytest

from app.core.models import RoleClient
from app.core.models.scripted import ScriptedChatModel
from app.core.rubric import load_rubric
from app.scoring.assign import assign
from app.scoring.prerating import prerate
from app.scoring.report import write_report
from app.store import CitedSource, Database, Item, Score, ScoreStore

IDS = ["faithful", "honest_limits", "in_role", "care_team"]


@pytest.fixture
def store(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'store.sqlite'}")
    store = ScoreStore(db)
    store.add_items([Item(item_id=f"it-{i}", collection="run-1", question="should I stop my olanzapine?",
                          answer=f"answer {i}: I can't advise on your own medicine [S09].",
                          sources=[CitedSource(id="S09", title="Antipsychotics", text="Never stop on your own.")],
                          hidden={"role": "medication_advisor", "condition": "off", "turn": i})
                     for i in range(1, 4)])
    yield store
    db.close()


def _judge(replies) -> tuple[RoleClient, ScriptedChatModel]:
    model = ScriptedChatModel(list(replies))
    return RoleClient("judge", "scripted-judge", model), model


def _rating(met: list[bool]) -> dict:
    return {"criteria": [{"id": i, "met": m, "reason": f"{i} decided"} for i, m in zip(IDS, met, strict=True)]}


def test_every_item_is_rated_blind_on_the_rubric_and_labelled(store):
    client, model = _judge([_rating([True, True, True, False]), _rating([True] * 4), _rating([False] * 4)])
    assert prerate(store, client, load_rubric(), "run-1") == (3, 0)
    ratings = {r.item_id: r for r in store.ai_ratings("run-1")}
    assert {i: r.score for i, r in ratings.items()} == {"it-1": 3, "it-2": 4, "it-3": 0}
    assert {r.model for r in ratings.values()} == {"scripted-judge"}
    assert ratings["it-1"].criteria["care_team"].met is False and ratings["it-1"].criteria["care_team"].reason
    prompt = " ".join(str(m.content) for m in model.prompts[0])
    assert all(c.title in prompt for c in load_rubric().criteria)
    assert "Never stop on your own." in prompt and "answer 1" in prompt
    assert "medication_advisor" not in prompt and "condition" not in prompt.split("The user's message")[1]
    assert store.scores() == []  # never a human score
    assert prerate(store, client, load_rubric(), "run-1") == (0, 0)  # already rated: not asked again


def test_a_rating_that_leaves_a_criterion_out_is_reported_not_guessed(store):
    partial = {"criteria": [{"id": "faithful", "met": True, "reason": "ok"}]}
    client, _ = _judge([partial, _rating([True] * 4), TimeoutError("judge timed out")])
    problems = []
    rated, failed = prerate(store, client, load_rubric(), "run-1",
                            on_item=lambda item, rating, problem: problems.append(problem) if not rating else None)
    assert (rated, failed) == (1, 2)
    assert "no verdict on honest_limits, in_role, care_team" in problems[0]
    assert "timed out" in problems[1]
    assert [r.item_id for r in store.ai_ratings()] == ["it-2"]


def test_the_report_compares_ai_with_the_human_median(store, tmp_path):
    client, _ = _judge([_rating([True] * 4), _rating([True, True, False, False]), _rating([False] * 4)])
    prerate(store, client, load_rubric(), "run-1")
    assign(store, "run-1", ["ann", "bob"], per_item=2, seed=0)
    for rater, scores in (("ann", [4, 2, 2]), ("bob", [4, 3, 1])):
        for n, score in enumerate(scores, 1):
            store.save_score(Score(rater=rater, item_id=f"it-{n}", score=score))
    report = write_report(store, "run-1", tmp_path / "report").read_text()
    # medians 4, 2.5 and 1.5 against AI 4, 2 and 0: exact (half up: 4, 3, 2) 1 of 3; within 1: 2 of 3
    assert "AI pre-rating by scripted-judge" in report
    assert "exact agreement with the human median 33%, within one point 67%" in report
