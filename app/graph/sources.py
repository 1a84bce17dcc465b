"""What retrieval reads of a turn's message: its sources, the conversation's topic, and the cards
it matches, gathered as `Readings` for `app.graph.routing.decide`; and the identification as
decided."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.messages import HumanMessage

from app.core import answer_types
from app.core.conditions import other_conditions
from app.core.medicines import medicines_named, mentions_medicine, without_medicines
from app.core.models import Deadline
from app.core.records import Candidate, Identification, InputScreen, ModelCall
from app.generation.composition import sources_named
from app.graph.conversation import (
    conversation_turns,
    delivered,
    last_user_message,
    resolve_clarification,
    said,
)
from app.graph.routing import Decision, Readings, own_case, seeks_nearest_boundary
from app.graph.services import Services
from app.graph.state import ChatState
from app.kb.cards import AnswerCard
from app.retrieval.condense import condense
from app.retrieval.references import named_medicines, refers_back, with_subject
from app.retrieval.references import resolve as resolve_references
from app.screen import adds_no_topic
from screening.crisis import answerable_emergency, request_kinds


@dataclass(frozen=True)
class Reading:
    """`text`: the message as retrieval read it (references resolved, or a model's rewrite);
    `question`: what the answer is composed for; `topic`: the conversation's, after this message;
    `requests`: the kinds of request it makes, as read with the conversation; `calls`: the model
    calls made to read it."""

    identification: Identification
    readings: Readings
    topic: list[str]
    question: str
    text: str
    requests: list[str]
    calls: list[ModelCall]


class SourceReader:
    def __init__(self, services: Services):
        self.services = services

    def read(self, state: ChatState, deadline: Deadline) -> Reading:
        """The message as retrieval reads it, with the conversation's topic, and the cards it
        matches; `deadline`: the turn's, for a model's rewrite of a follow-up."""
        screen = state["screen"]
        text = screen.text
        chosen = resolve_clarification(text, state.get("clarify_candidates") or [])
        previous = last_user_message(state)
        topic = list(state.get("topic") or [])
        requests = list(screen.boundary_kinds)
        calls, condensed = [], None
        own = own_case(screen)  # whose case and what is asked: read once for the checks below
        # What the answer is composed for, in the asker's own words (see extractive_answer).
        asked_now = screen.text
        if chosen is not None:
            # The choice ("2", "yes") answers the question that offered it.
            asked_now = previous or text
            identification = Identification(outcome="clear", candidates=[chosen], parts=[asked_now], latency_ms=0.0)
            topic = [asked_now]
            readings = Readings(own_case=own, outcome="clear", retrieved=False)
        elif screen.follow_up and adds_no_topic(text) and (last := self.last_answer_sources(state)):
            # "Tell me more", "why?", "how often?": more from the sources of the last answer; on
            # its question, unless this message asks for a kind of answer of its own.
            asked_now = text if answer_types.wanted(text) else previous or text
            identification = Identification(outcome="clear", candidates=last, parts=[asked_now], latency_ms=0.0)
            readings = Readings(own_case=own, outcome="clear", retrieved=False)
        else:
            earlier = said(state, HumanMessage)
            condensed, calls = self._condensed(state, text, deadline) if earlier else (None, [])
            asked_now = condensed or asked_now
            # "is it safe…" -> "is clozapine …", unless the reference points into the message itself
            # (a model's rewrite stands alone: `identify` asks only if it matters)
            own_topic = None if condensed else bool(earlier) and self.services.identifier.names_own_topic(text)
            # The topic as retrieval read it: "what is risperdone" names risperidone.
            read_topic = [self.services.identifier.correct_spelling(words) for words in topic]
            text = condensed or (text if own_topic else resolve_references(text, read_topic))
            # "is it free?" -> "is CBT for psychosis free?", still read with the topic
            subject_named = text if condensed or own_topic else with_subject(text, read_topic)
            # A message that opens like a continuation ("and for teenagers?", "what about for
            # kids?") leans on the topic as a reference does, whatever its own words name.
            referred, text = subject_named != text or screen.follow_up, subject_named
            if requests and medicines_named(text) - medicines_named(screen.text):
                # A request is of the kind its words mean with the medicine they refer to: "can I
                # stop it?" after olanzapine asks to stop olanzapine, not to stop a side effect.
                requests = request_kinds(text, self.services.resources) or requests
            last_sources = [c.source_id for c in self.last_answer_sources(state)]
            identification = self.services.identifier.identify(text, context=" ".join(topic), own_topic=own_topic,
                                                               last_sources=last_sources, referred=referred)
            if other_conditions(screen.text, self.services.profile.condition_words) \
                    and not medicines_named(screen.text):
                # "what diet should my dad follow for his diabetes?": another illness, and nothing
                # of ours; sentences that share its words ("eat regular meals") would not answer it.
                identification = identification.model_copy(update={"outcome": "none", "candidates": []})
            # A message read with the topic continues it, one that stood alone starts a new one;
            # one that nothing covers leaves the topic as it was, so the next follow-up is read
            # with what was answered ("does it go away?" after "is it permanent?" after NMS, "does
            # it hurt?" after "how much does it cost in America?" after depots).
            if identification.outcome == "none":
                # Unless it names a medicine of its own: "it" then means that medicine ("tell me
                # about lithium", then "what are its side effects?" is not about clozapine).
                if medicines_named(text) - medicines_named(" ".join(topic)):
                    topic = [text]
            elif not identification.context and topic and not answer_types.asks_anything(screen.text):
                # A statement adds to the situation rather than starting a new topic ("my review
                # is next week", then "I always freeze and forget what to say", then "any tips?").
                topic = [topic[-1], text]
            elif not identification.context:
                topic = [text]
            else:
                topic = [topic[0], text]
            # "can I just stop taking it?" after clozapine speaks of a medicine, by reference.
            medicine = mentions_medicine(text) or (refers_back(text) and bool(named_medicines(read_topic)))
            readings = self._readings(state, text, identification, last_sources, own, medicine, requests)
        return Reading(identification=identification, readings=readings, topic=topic, question=asked_now,
                       text=text, requests=requests, calls=calls)

    def _readings(self, state: ChatState, text: str, identification: Identification, last_sources: list[str],
                  own: bool, medicine: bool, requests: list[str]) -> Readings:
        """What `decide` reads of a message retrieval read (`text`, as it read it): the cards it
        matches, and whose case, what is asked, how urgent, what was said already. `medicine`:
        it speaks of a medicine, by name, in words or by reference to the conversation's;
        `requests`: the kinds of request it makes."""
        screen, cards, settings = state["screen"], self.services.cards, self.services.settings.retrieval
        # Retrieval's sources vouch for a card only for a message read on its own words:
        # "can it be permanent?" after NMS is not about the tardive dyskinesia card's "it".
        found = [c.source_id for c in identification.candidates] \
            if identification.outcome == "clear" and not identification.context else []
        # The sources whose own keywords the message says: what a request is about, whatever
        # kind of request its other words make it ("should we stop him smoking weed?"), also
        # when it refers back to a medicine ("my brother is on it and wants to stop smoking").
        named = sources_named(self.services.identifier, text) if own else set()
        subjects = sources_named(self.services.identifier, without_medicines(text)) if own else set()
        # Matched on its words as the screen read them ("is schizofrenia genetic" is the causes
        # card's question, not the one on what schizophrenia is); texting forms stay as typed.
        match = cards.match(self.services.identifier.correct_english(text), settings,
                            own_case=own, requests=requests, found=found,
                            topics=named, subjects=subjects, medicine=medicine,
                            continued=last_sources if identification.context else [])
        # Sought only when the message's own words match no card (see `decide`).
        in_context = cards.match(f"{identification.context} {text}", settings, own_case=own,
                                 requests=requests) \
            if match is None and identification.context else None
        nearest = cards.nearest_boundary(text, settings) \
            if seeks_nearest_boundary(own, screen.urgent, identification.outcome, match) else None
        matched = [m for m in (match, in_context, nearest) if m is not None]
        return Readings(own_case=own, urgent=screen.urgent, asks=answer_types.asks_anything(screen.text),
                        outcome=identification.outcome, match=match, match_in_context=in_context,
                        nearest_boundary=nearest,
                        urgent_card=self.urgent_card(screen) if screen.urgent else None,
                        delivered=frozenset(m.card.id for m in matched if delivered(m.card, state)))

    def with_decision(self, identification: Identification, decision: Decision) -> Identification:
        """The identification as decided: its outcome, then the urgent lead's sources after what
        was found, then the sources of the card delivered first."""
        if decision.outcome != identification.outcome:
            identification = identification.model_copy(update={"outcome": decision.outcome})
        if decision.lead is not None:
            identification = with_card_sources(identification, decision.lead, self.services, first=False)
        if decision.cited is not None:
            identification = with_card_sources(identification, decision.cited, self.services)
        return identification

    def _condensed(self, state: ChatState, text: str, deadline: Deadline) -> tuple[str | None, list[ModelCall]]:
        """The message rewritten by the model as a question that stands alone, or None (no model,
        or its answer was unusable: the offline reading stands); and the call made."""
        if self.services.condenser is None:
            return None, []
        rewritten, call = condense(self.services.condenser, conversation_turns(state.get("messages", [])), text,
                                   deadline=deadline)
        return rewritten, [call] if call is not None else []

    def medical_the_sources_answer(self, screen: InputScreen, before: str) -> bool:
        """A medical emergency read by the learned layer alone, about a medicine, that retrieval
        finds clearly covered by a source. The medicine may be the one the message before named
        ("my son was started on haloperidol last week", then "since yesterday he's had a high
        temperature…"): then retrieval reads the two together."""
        if not answerable_emergency(screen.text, self.services.resources):
            return False
        if mentions_medicine(screen.text):
            return self.services.identifier.identify(screen.text).outcome == "clear"
        return mentions_medicine(before) and self.services.identifier.identify(
            screen.text, context=before).outcome == "clear"

    def urgent_card(self, screen: InputScreen) -> AnswerCard | None:
        """The urgent card for the screen's reading of the situation (a medical emergency: medical
        help), else the general one (help today from the mental health team)."""
        urgent = [c for c in self.services.cards.cards if c.kind == "urgent"]
        situation = screen.crisis_kind if screen.crisis_layer else ""  # read as a crisis, then answered
        return (next((c for c in urgent if situation and situation in c.requests), None)
                or next((c for c in urgent if not c.requests), None))

    def last_answer_sources(self, state: ChatState) -> list[Candidate]:
        in_play = state.get("sources_in_play") or {}
        latest = max(in_play.values(), default=0)
        return [Candidate(source_id=sid, title=doc.title, confidence=1.0)
                for sid, last in in_play.items() if last == latest and (doc := self.services.source_text(sid))]


def with_card_sources(found: Identification, card: AnswerCard, services: Services, *,
                      first: bool = True) -> Identification:
    """The card's sources (it cites them) and what retrieval found clear, each source once: the
    card's first when it is the answer, after what was found when it only leads (an urgent
    answer: the situation's sources, then getting help)."""
    cited = [Candidate(source_id=sid, title=doc.title, confidence=1.0)
             for sid in card.sources if (doc := services.source_text(sid))]
    found_clear = found.candidates if found.outcome == "clear" else []
    ordered = [*cited, *found_clear] if first else [*found_clear, *cited]
    unique: dict[str, Candidate] = {}
    for candidate in ordered:
        unique.setdefault(candidate.source_id, candidate)
    return found.model_copy(update={"outcome": "clear", "candidates": list(unique.values())})
