"""Follow-up suggestions: from the knowledge base's questions on the topic, never repeated."""

from __future__ import annotations

from app.core.records import TurnTrace
from app.ui.suggestions import suggestions_per_turn

QUESTIONS = {
    "S11": ["What is clozapine used for?", "Why does clozapine need blood tests?", "Can I drink on clozapine?"],
    "S12": ["What are side effects?", "Does it cause weight gain?"],
}


def turn(user: str, cited: list[str], route: str = "answer") -> TurnTrace:
    return TurnTrace(user_message=user, citations=cited, route=route)


def plan(*turns: TurnTrace) -> list[list[str]]:
    return suggestions_per_turn(turns, lambda sid: QUESTIONS.get(sid, []))


def test_suggestions_alternate_sources_and_skip_what_was_nearly_asked():
    first, = plan(turn("What is clozapine?", ["S11", "S12"]))
    # "what is clozapine used for?" repeats the question; the rest alternate between the sources
    assert first == ["What are side effects?", "Why does clozapine need blood tests?", "Does it cause weight gain?"]


def test_nothing_shown_or_asked_is_offered_again_later():
    turns = [turn("What is clozapine?", ["S11"]), turn("Does it cause weight gain?", ["S12", "S11"]),
             turn("tell me more", ["S11", "S12"])]
    shown = plan(*turns)
    flat = [q for offered in shown for q in offered]
    assert len(flat) == len(set(flat))
    assert "Does it cause weight gain?" not in flat[len(shown[0]):]
    assert shown[2] == []  # everything on these topics was asked or shown


def test_no_suggestions_under_greetings_crises_or_did_you_mean():
    for route in ("small_talk", "crisis", "clarify", "no_match"):
        assert plan(turn("hi", ["S11"], route=route)) == [[]]
