"""Where a turn goes, decided in one place.

`after_screen` settles the screen's route with what only the graph knows. `identify_sources`
gathers the turn's `Readings` (what the screen read, what retrieval found, the cards the message
and the conversation match, which of them were said in full already) and
`decide` turns them into a `Decision`: the card kept, any change to the identification's
outcome, and the route. `decide` calls no service; the tests give it readings as a table.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Literal

from app.core import answer_types
from app.core.records import InputScreen, Route
from app.core.text import RELATIONS
from app.kb.cards import AnswerCard
from app.retrieval.cards import CardMatch

Outcome = Literal["clear", "middling", "none"]
ScreenRoute = Literal["answer", "crisis", "small_talk", "notice"]

# The screen's crisis kinds in which the writer is with someone else in danger, not in danger themselves.
SOMEONE_ELSE_IN_DANGER = frozenset(["third_person", "third_person_risk", "third_person_danger", "missing_person"])
# Not a person the writer's own state is about ("suspicious of my flatmates", "shouting at her"):
# whose situation it is, not who is in it.
_ANOTHER_PERSON = re.compile(
    r"(?<!\bof )(?<!\bat )(?<!\btowards )"
    r"(?:\b(?:he|she|him|his|her|hers|he'?s|she'?s|hes|shes)\b|\b(?:my|our)\s+(?:\w+\s+){0,2}?(?:"
    + "|".join(RELATIONS) + r")s?\b)", re.IGNORECASE)
# "Who do I call?", "where can I go tonight?", "what number do I ring?": where to get help, not what to do.
_ASKS_WHO_TO_CONTACT = re.compile(
    r"\b(?:who|where|what (?:number|line|service))\b(?:\W+\w+){0,5}?\W+(?:call|ring|phone|contact|text|go|turn|"
    r"get help|speak|talk)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Readings:
    """What is known of a turn once retrieval has read it.

    `retrieved`: the message was read by retrieval and matched to cards; not a choice from our own
    "did you mean …?" nor "tell me more" (their sources are already chosen, and no card is sought).
    `own_case`: a request about the writer's own case (`own_case`). `urgent`: someone unwell now
    (the screen's reading). `asks`: the message asks anything (`answer_types.asks_anything`).
    `outcome`: the identification's. `match`: the card for the message's own words;
    `match_in_context`: the card for it read with the conversation, sought only when its own words
    match none; `nearest_boundary`: the nearest boundary card, sought only when
    `seeks_nearest_boundary`. `urgent_card`: the urgent card for the situation, when urgent.
    `delivered`: the ids of those cards whose answer was given in full earlier in the conversation."""

    own_case: bool = False
    urgent: bool = False
    asks: bool = True
    outcome: Outcome = "clear"
    retrieved: bool = True
    match: CardMatch | None = None
    match_in_context: CardMatch | None = None
    nearest_boundary: CardMatch | None = None
    urgent_card: AnswerCard | None = None
    delivered: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Decision:
    """`outcome`: the identification's, before any card's sources are added (adding them makes it
    clear). `lead`: the urgent card whose sources go in after what was found. `cited`: the card
    delivered as the answer, whose sources go in first. `card`: the card kept for the turn (also
    one only near the words, a fallback for a rejected draft); None once said in full already.
    `route`: where the turn goes."""

    outcome: Outcome
    route: Route
    card: CardMatch | None = None
    cited: AnswerCard | None = None
    lead: AnswerCard | None = None

    @property
    def confident(self) -> bool:
        return self.card is not None and self.card.confident


def after_screen(route: ScreenRoute, *, sources_answer_emergency: bool = False, chose_from_menu: bool = False,
                 about_us: bool = False) -> ScreenRoute:
    """The screen's route, as what only the graph knows changes it: `sources_answer_emergency`, a
    medical emergency the sources answer (`SourceReader.medical_the_sources_answer`, asked only of
    a crisis not right after another); `chose_from_menu`, a reply that picks from our own "did you
    mean …?"; `about_us`, a question about this chat (`about_this_chat`)."""
    if route == "crisis" and sources_answer_emergency:
        # A reaction to a medicine that the knowledge base describes (a fever on clozapine, the
        # signs of NMS) is answered: how to get medical help first, then what the sources say
        # about it, cited. Danger said in so many words (not breathing, an overdose taken: a
        # pattern) keeps the crisis reply.
        route = "answer"
    if route == "small_talk" and chose_from_menu:
        return "answer"  # "2", "yes": the answer to our own "did you mean …?"
    if route == "answer" and about_us:
        return "small_talk"  # "is this chat private?": about us, not health records
    return route


def seeks_nearest_boundary(own_case: bool, urgent: bool, outcome: Outcome, match: CardMatch | None = None) -> bool:
    """Whether `decide` may fall back on the nearest boundary card: a request about one's own case
    that retrieval did not cover, or from someone unwell now (a middling reading of a calm one is
    answered as clear instead), and whose own words' card (`match`) is not confident."""
    return own_case and (urgent or outcome == "none") and not (match is not None and match.confident)


def decide(readings: Readings) -> Decision:
    """The card kept, the identification's outcome and the route, from the turn's readings."""
    r = readings
    match, outcome = r.match if r.retrieved else None, r.outcome
    lead = None
    if r.retrieved:
        if match is None and r.match_in_context is not None:
            # Too few words of its own to be near any card ("will i get it too?" after "my mum
            # was just diagnosed"): the message as read with the conversation.
            match = r.match_in_context
            if match.card.id in r.delivered:
                match = None  # the card the conversation is about, not an answer to what it asks now
        if match is not None and not r.own_case and not r.urgent and not r.asks:
            # "my mum was just diagnosed, im 15" asks nothing: not the answer to "will I get
            # it?", nor a boundary reply to it, however close the words; what its topic is,
            # and what to ask next. A card written for a statement like it ("I'm exhausted
            # from caring for my son") was vetted as the reply to saying so, and is given when
            # it is the clearly nearest card, if not as close as a question's card must be
            # ("i have schizophrenia" and "I was diagnosed with schizophrenia last month"); a
            # boundary card only as close, as it answers requests the screen did not read here.
            if answer_types.asks_anything(match.phrasing):
                match = None
            elif match.card.kind == "answer":
                match = dataclasses.replace(match, confident=True)
        if r.urgent and not r.own_case and match is not None and match.card.kind != "answer":
            # Someone unwell now hears how to get help first, not what we cannot do; and after
            # it what the sources say of the situation, not the lead alone.
            match = None
        if r.own_case and (outcome != "clear" or r.urgent) and (match is None or not match.confident):
            # A request about one's own case gets a boundary reply, never a menu or "not
            # covered": from the likeliest sources found, else the nearest boundary card. Someone
            # unwell now gets the nearest card's safety fact ("never restart alone"), whatever
            # the sources found for the symptoms.
            if outcome == "middling" and not r.urgent:
                outcome = "clear"
            else:
                match = r.nearest_boundary or match
        if outcome == "middling" and not r.own_case and not r.urgent and not r.asks:
            # "I'm on clozapine" asks nothing, so "did you mean…?" asks back what was never
            # asked: what its likeliest topic is, and what to ask next, answer it instead.
            outcome = "clear"
        if r.urgent and r.urgent_card is not None:
            # Someone unwell now gets how to get help today (the lead's sources go in with
            # what was found), never a menu or "not covered".
            lead = r.urgent_card
    confident = match is not None and match.confident
    cited = match.card if confident else None
    route = _route("clear" if lead or cited else outcome, r.own_case, match)
    if confident and match.card.id in r.delivered and not (match.card.kind == "boundary" and r.own_case):
        # Said in full already: a follow-up matched to it ("why the blood tests?" after the
        # clozapine card) hears what the card did not say, from its sources, not the card again.
        # Not a request about someone's own case ("is she relapsing?" after the warning signs):
        # its boundary reply and safety facts bear saying again.
        match = None
    return Decision(outcome=outcome, route=route, card=match, cited=cited, lead=lead)


def _route(outcome: Outcome, own_case: bool, match: CardMatch | None) -> Route:
    """After identification: "did you mean", not covered, a boundary reply to a request about
    the person's own case (the screen's reading, or a matching boundary card), or an answer."""
    if outcome != "clear":
        return "clarify" if outcome == "middling" else "no_match"
    if own_case or (match is not None and match.confident and match.card.kind == "boundary"):
        return "boundary"
    return "answer"


def own_case(screen: InputScreen) -> bool:
    """A request about the writer's own case, made afresh (a follow-up continues the last topic).
    Someone unwell now asks about their own case too ("stopped my risperidone and the voices are
    back, what do I do?"): what to do about it is for their team, and the reply leads with how to
    get help today (the urgent card). Not when all that is asked is who to turn to (the contacts
    answer that), nor what to do for someone else unwell now (the screen's reading of whose
    situation it is): how to get help answers it. A request of its own about them ("is he
    relapsing?", "could this be schizophrenia?") keeps its boundary reply, led by how to get help
    today."""
    if not screen.personal_advice or screen.follow_up:
        return False
    if not screen.urgent:
        return True
    if _ASKS_WHO_TO_CONTACT.search(screen.text):
        return False
    # The likeliest kind says what is asked: "urgent" is what to do now, which the help answers.
    asks_a_request_of_its_own = bool(screen.boundary_kinds) and screen.boundary_kinds[0] != "urgent"
    return not _about_someone_else(screen) or asks_a_request_of_its_own


def _about_someone_else(screen: InputScreen) -> bool:
    """The message tells of another person (the screen's reading of the situation's kind, or a
    relative or "he"/"she" in its words: "is he just being lazy?")."""
    return screen.crisis_kind in SOMEONE_ELSE_IN_DANGER or bool(_ANOTHER_PERSON.search(screen.text))
