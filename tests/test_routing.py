"""Where a turn goes, as tables: the turn's readings in, the decision out (`app.graph.routing`).

Each row names the case it stands for; rows quoting a message are the decision behind an end to
end case in test_graph.py or test_answer_table.py, which run the whole answer graph.
"""

from __future__ import annotations

import pytest

from app.core.records import InputScreen
from app.graph.routing import Readings, after_screen, decide, own_case, seeks_nearest_boundary
from app.kb.cards import AnswerCard
from app.retrieval.cards import CardMatch


def card(card_id: str, kind: str = "answer") -> AnswerCard:
    return AnswerCard(id=card_id, title=card_id, questions=["q?"], kind=kind, body=f"The {card_id} card [S1].")


def matched(card_id: str, kind: str = "answer", *, confident: bool = True, phrasing: str = "will I get it?") -> CardMatch:
    return CardMatch(card(card_id, kind), 0.8, phrasing, confident=confident)


ANSWER = matched("A1")
NEAR_ANSWER = matched("A1", confident=False)
BOUNDARY = matched("B1", "boundary")
NEAR_BOUNDARY = matched("B1", "boundary", confident=False)
NEAREST = matched("B9", "boundary")
IN_CONTEXT = matched("A10")
STATEMENT_CARD = matched("A7", confident=False, phrasing="I'm exhausted from caring for my son")
STATEMENT_BOUNDARY = matched("B7", "boundary", confident=False, phrasing="my mum has schizophrenia")
URGENT = card("U1", "urgent")

# (readings, route, outcome, card kept (id, confident) or None, cited id, lead id)
ROWS = [
    # -- a choice from our own menu, or "tell me more": sources chosen already, no card sought --
    pytest.param(Readings(retrieved=False), "answer", "clear", None, None, None, id="a choice or more: an answer"),
    pytest.param(Readings(retrieved=False, own_case=True), "boundary", "clear", None, None, None,
                 id="a choice or more about one's own case: a boundary reply"),
    pytest.param(Readings(retrieved=False, own_case=True, urgent=True, urgent_card=URGENT, nearest_boundary=NEAREST),
                 "boundary", "clear", None, None, None, id="a choice or more: no lead, no nearest card"),
    # -- what retrieval found, no card --
    pytest.param(Readings(outcome="clear"), "answer", "clear", None, None, None, id="found clearly: an answer"),
    pytest.param(Readings(outcome="middling"), "clarify", "middling", None, None, None, id="unsure: did you mean"),
    pytest.param(Readings(outcome="none"), "no_match", "none", None, None, None, id="nothing found: not covered"),
    # -- the card for the message's words --
    pytest.param(Readings(match=ANSWER), "answer", "clear", ("A1", True), "A1", None, id="a card: delivered"),
    pytest.param(Readings(match=ANSWER, outcome="none"), "answer", "none", ("A1", True), "A1", None,
                 id="a card where retrieval found nothing: its sources make it clear"),
    pytest.param(Readings(match=NEAR_ANSWER), "answer", "clear", ("A1", False), None, None,
                 id="a card only near the words: kept as a fallback, not cited"),
    pytest.param(Readings(match=NEAR_ANSWER, outcome="none"), "no_match", "none", ("A1", False), None, None,
                 id="a card only near the words of what nothing covers"),
    pytest.param(Readings(match=BOUNDARY), "boundary", "clear", ("B1", True), "B1", None,
                 id="a boundary card: a boundary reply"),
    pytest.param(Readings(match=NEAR_BOUNDARY), "answer", "clear", ("B1", False), None, None,
                 id="a boundary card only near the words: an answer"),
    # -- read with the conversation --
    pytest.param(Readings(match_in_context=IN_CONTEXT), "answer", "clear", ("A10", True), "A10", None,
                 id="'will i get it to?' after a diagnosis: the card read with the conversation"),
    pytest.param(Readings(match_in_context=IN_CONTEXT, delivered=frozenset({"A10"})), "answer", "clear", None, None,
                 None, id="the card the conversation is about: not an answer to what it asks now"),
    pytest.param(Readings(match=ANSWER, match_in_context=IN_CONTEXT), "answer", "clear", ("A1", True), "A1", None,
                 id="the message's own card before the conversation's"),
    # -- a statement (asks nothing) --
    pytest.param(Readings(asks=False, match=ANSWER), "answer", "clear", None, None, None,
                 id="'my mum was just diagnosed, im 15': not the card for a question it never asked"),
    pytest.param(Readings(asks=False, match=STATEMENT_CARD), "answer", "clear", ("A7", True), "A7", None,
                 id="'I'm so exhausted from caring for my son': the card written for a statement like it"),
    pytest.param(Readings(asks=False, match=STATEMENT_BOUNDARY), "answer", "clear", ("B7", False), None, None,
                 id="a statement near a boundary card's statement: only as close as a question's"),
    pytest.param(Readings(asks=False, match=ANSWER, own_case=True), "boundary", "clear", ("A1", True), "A1", None,
                 id="a request about one's own case is no statement"),
    pytest.param(Readings(asks=False, outcome="middling"), "answer", "clear", None, None, None,
                 id="'I'm on clozapine': its likeliest topic, not did you mean"),
    pytest.param(Readings(asks=False, outcome="middling", own_case=True, nearest_boundary=NEAREST), "boundary",
                 "clear", None, None, None, id="a statement about one's own case, unsure: from what was found"),
    # -- someone unwell now --
    pytest.param(Readings(urgent=True, urgent_card=URGENT), "answer", "clear", None, None, "U1",
                 id="unwell now: how to get help today leads"),
    pytest.param(Readings(urgent=True, urgent_card=URGENT, outcome="none"), "answer", "none", None, None, "U1",
                 id="unwell now, nothing found: never not covered"),
    pytest.param(Readings(urgent=True, outcome="middling"), "clarify", "middling", None, None, None,
                 id="unwell now without an urgent card: as found"),
    pytest.param(Readings(urgent=True, urgent_card=URGENT, outcome="middling", asks=False), "answer", "middling",
                 None, None, "U1", id="unwell now, unsure, saying something: the lead, not the topic's guess"),
    pytest.param(Readings(urgent=True, urgent_card=URGENT, match=BOUNDARY), "answer", "clear", None, None, "U1",
                 id="'our 19 yr old stopped his meds … what do we do?': help, not what we cannot do"),
    pytest.param(Readings(urgent=True, urgent_card=URGENT, match=ANSWER), "answer", "clear", ("A1", True), "A1",
                 "U1", id="unwell now: a general card after the lead"),
    pytest.param(Readings(urgent=True, urgent_card=URGENT, asks=False, match=ANSWER), "answer", "clear",
                 ("A1", True), "A1", "U1", id="unwell now saying something: no statement rule"),
    # -- a request about one's own case --
    pytest.param(Readings(own_case=True), "boundary", "clear", None, None, None,
                 id="'Should I stop my meds?' with sources found: a boundary reply from them"),
    pytest.param(Readings(own_case=True, outcome="middling"), "boundary", "clear", None, None, None,
                 id="own case, unsure: a boundary reply from the likeliest sources, never a menu"),
    pytest.param(Readings(own_case=True, outcome="none", nearest_boundary=NEAREST), "boundary", "none",
                 ("B9", True), "B9", None, id="own case, nothing found: the nearest boundary card"),
    pytest.param(Readings(own_case=True, outcome="none"), "no_match", "none", None, None, None,
                 id="own case, nothing found, no boundary card near"),
    pytest.param(Readings(own_case=True, outcome="none", match=NEAR_ANSWER, nearest_boundary=NEAREST), "boundary",
                 "none", ("B9", True), "B9", None, id="own case: the nearest boundary card over one only near"),
    pytest.param(Readings(own_case=True, outcome="none", match=BOUNDARY, nearest_boundary=NEAREST), "boundary",
                 "none", ("B1", True), "B1", None, id="own case: its confident card over the nearest"),
    pytest.param(Readings(own_case=True, urgent=True, urgent_card=URGENT, match=NEAR_ANSWER,
                          nearest_boundary=NEAREST), "boundary", "clear", ("B9", True), "B9", "U1",
                 id="'stopped my risperidone and the voices are back': help today, then the nearest card's fact"),
    pytest.param(Readings(own_case=True, urgent=True, urgent_card=URGENT, match=NEAR_ANSWER), "boundary", "clear",
                 ("A1", False), None, "U1", id="own case, unwell now, no boundary card near: the near card stays"),
    pytest.param(Readings(own_case=True, urgent=True, urgent_card=URGENT, match=BOUNDARY), "boundary", "clear",
                 ("B1", True), "B1", "U1", id="'could it be schizophrenia?' about someone unwell now: led by help"),
    pytest.param(Readings(own_case=True, urgent=True, outcome="middling", nearest_boundary=NEAREST), "boundary",
                 "middling", ("B9", True), "B9", None, id="own case, unwell now, unsure: the nearest card"),
    # -- said in full already --
    pytest.param(Readings(match=ANSWER, delivered=frozenset({"A1"})), "answer", "clear", None, "A1", None,
                 id="'why the blood tests?' after the clozapine card: what it did not say"),
    pytest.param(Readings(match=BOUNDARY, delivered=frozenset({"B1"})), "boundary", "clear", None, "B1", None,
                 id="a boundary card said already, not about one's own case"),
    pytest.param(Readings(match=BOUNDARY, own_case=True, delivered=frozenset({"B1"})), "boundary", "clear",
                 ("B1", True), "B1", None, id="'is he relapsing?' after the warning signs: its boundary card again"),
    pytest.param(Readings(match=NEAR_ANSWER, delivered=frozenset({"A1"})), "answer", "clear", ("A1", False), None,
                 None, id="a card only near the words stays a fallback, said or not"),
]


@pytest.mark.parametrize(("readings", "route", "outcome", "kept", "cited", "lead"), ROWS)
def test_the_route_and_the_card_kept_follow_from_the_readings(readings, route, outcome, kept, cited, lead):
    decision = decide(readings)
    assert decision.route == route
    assert decision.outcome == outcome
    assert ((decision.card.card.id, decision.card.confident) if decision.card else None) == kept
    assert (decision.cited.id if decision.cited else None) == cited
    assert (decision.lead.id if decision.lead else None) == lead
    assert decision.confident == bool(kept and kept[1])


@pytest.mark.parametrize(("route", "readings", "expected"), [
    pytest.param("answer", {}, "answer", id="a question"),
    pytest.param("crisis", {}, "crisis", id="a crisis"),
    pytest.param("crisis", {"sources_answer_emergency": True}, "answer",
                 id="a fever on clozapine, which the sources describe: answered, medical help first"),
    pytest.param("answer", {"sources_answer_emergency": True}, "answer", id="only a crisis is answered so"),
    pytest.param("crisis", {"sources_answer_emergency": True, "about_us": True}, "small_talk",
                 id="an answered emergency about this chat"),
    pytest.param("small_talk", {"chose_from_menu": True}, "answer", id="'2' after did you mean: the choice"),
    pytest.param("small_talk", {}, "small_talk", id="'ok'"),
    pytest.param("small_talk", {"about_us": True}, "small_talk", id="small talk about this chat"),
    pytest.param("answer", {"about_us": True}, "small_talk", id="'is this chat private?': about us"),
    pytest.param("answer", {"chose_from_menu": True}, "answer", id="a question that names a choice"),
    pytest.param("notice", {"chose_from_menu": True, "about_us": True}, "notice", id="a notice stays one"),
    pytest.param("crisis", {"chose_from_menu": True, "about_us": True}, "crisis",
                 id="a crisis is never small talk nor a choice"),
])
def test_the_screen_s_route_changes_only_with_what_the_graph_knows(route, readings, expected):
    assert after_screen(route, **readings) == expected


def screen(text: str, *, urgent: bool = False, kinds: tuple[str, ...] = ("stop_or_reduce",), follow_up: bool = False,
           personal: bool = True, crisis_kind: str = "") -> InputScreen:
    return InputScreen(text=text, personal_advice=personal, urgent=urgent, boundary_kinds=list(kinds),
                       follow_up=follow_up, crisis_kind=crisis_kind)


@pytest.mark.parametrize(("read", "expected"), [
    pytest.param(screen("what is clozapine?", personal=False), False, id="a general question"),
    pytest.param(screen("should I stop my meds?"), True, id="a request about one's own case"),
    pytest.param(screen("should I stop it then?", follow_up=True), False, id="a follow-up continues the topic"),
    pytest.param(screen("should my son stop taking his clozapine?"), True, id="someone else's, calm: still a request"),
    pytest.param(screen("stopped my risperidone and the voices are back, what do I do?", urgent=True,
                        kinds=("urgent",)), True, id="unwell now after stopping one's own medicine"),
    pytest.param(screen("voices are getting really bad tonight and i cant get hold of my CPN. who do i call",
                        urgent=True, kinds=("urgent",)), False, id="unwell now, asking who to call"),
    pytest.param(screen("our 19 yr old stopped his meds and now he is in bed till 3pm, what do we do?",
                        urgent=True, kinds=("urgent",)), False, id="someone else unwell now: what to do"),
    pytest.param(screen("my grandad says the neighbours are spying on him. could it be schizophrenia?",
                        urgent=True, kinds=("diagnosis", "urgent")), True,
                 id="someone else unwell now, a request of its own"),
    pytest.param(screen("what do I do now?", urgent=True, kinds=("urgent",), crisis_kind="third_person"), False,
                 id="the screen's reading: someone else in danger"),
    pytest.param(screen("i'm suspicious of my flatmates, what do i do?", urgent=True, kinds=("urgent",)), True,
                 id="others named as what the writer's state is about"),
    pytest.param(screen("what do I do, the voices won't stop", urgent=True, kinds=()), True,
                 id="unwell now, no kind read"),
])
def test_a_request_about_one_s_own_case_is_read_from_the_screen(read, expected):
    assert own_case(read) is expected


@pytest.mark.parametrize(("own", "urgent", "outcome", "match", "expected"), [
    (False, True, "none", None, False),
    (True, False, "clear", None, False),
    (True, False, "middling", None, False),
    (True, False, "none", None, True),
    (True, True, "clear", None, True),
    (True, True, "middling", None, True),
    (True, True, "clear", NEAR_BOUNDARY, True),
    (True, True, "clear", BOUNDARY, False),
    (True, False, "none", ANSWER, False),
])
def test_the_nearest_boundary_card_is_sought_only_where_the_decision_may_fall_back_on_it(own, urgent, outcome,
                                                                                         match, expected):
    assert seeks_nearest_boundary(own, urgent, outcome, match) is expected
    readings = Readings(own_case=own, urgent=urgent, outcome=outcome, match=match, nearest_boundary=NEAREST)
    if not expected:  # however near a boundary card, the decision never takes one it did not seek
        assert decide(readings).card is match
    else:
        assert decide(readings).card is NEAREST
