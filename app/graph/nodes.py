"""The answer graph's nodes. Each takes the state and returns only what it changes.

screen_input → identify_sources → enhance_prompt → generate → critical_analysis → respond,
with side exits: crisis messages go to `crisis_response`, small talk to `small_talk`, unclear or
unknown questions to `clarify`.
Every node also receives the turn's `TurnContext` (LangGraph's runtime context): the filter's mode
is chosen per call, not per chatbot.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from datetime import datetime

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
)
from langchain_core.messages.utils import count_tokens_approximately, trim_messages
from langgraph.runtime import Runtime

from app.core import answer_types
from app.core.config import ROLES
from app.core.errors import ModelError
from app.core.medicines import medicines_named, mentions_medicine, without_medicines
from app.core.models import Deadline, call_text
from app.core.records import (
    Candidate,
    Identification,
    InputScreen,
    ModelCall,
    NodeRun,
    Route,
    SourceText,
    Turn,
    TurnTrace,
)
from app.core.text import RELATIONS, citations_in, split_sentences, strip_citations
from app.generation.cards import led_by_answer
from app.generation.extractive import compose_extractive_answer, overview, pick_sentences
from app.generation.passages import leaning_run, passages
from app.graph.services import Services
from app.graph.state import ChatState, TurnContext
from app.kb.cards import AnswerCard
from app.prompts import chat_system_prompt, contact_lines, crisis_reply, reply, topics_list
from app.retrieval.cards import CardMatch
from app.retrieval.condense import condense
from app.retrieval.references import (
    about_another_medicine,
    named_medicines,
    refers_back,
    with_subject,
)
from app.retrieval.references import resolve as resolve_references
from app.screen import adds_no_topic, says_little, screen_message, was_crisis
from app.small_talk import about_this_chat, small_talk_reply
from judges.local.crisis import answerable_emergency, latest_crisis_kind
from judges.schema import DraftContext

# How sure retrieval must be of a source, however short of covering a message, to offer its
# question to someone who asked nothing (below it the ranking is noise: "my dad has it").
RELATED_FROM = 0.02
# The screen's crisis kinds in which the writer is with someone else in danger, not in danger themselves.
_SOMEONE_ELSE_IN_DANGER = frozenset(["third_person", "third_person_risk", "third_person_danger", "missing_person"])
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
_CHOICE = re.compile(r"^\s*(?:option\s*|number\s*|#)?([1-9])\b", re.IGNORECASE)
_YES = re.compile(r"^\s*(yes|yeah|yep|yup|y|ok|okay|sure|that one|the first( one)?)\b", re.IGNORECASE)


def timed(name: str) -> Callable[[Callable[..., dict]], Callable[..., dict]]:
    """Record the node's latency in the turn trace."""

    def decorate(node: Callable[..., dict]) -> Callable[..., dict]:
        def run(self: AnswerNodes, state: ChatState, runtime: Runtime[TurnContext]) -> dict:
            started = time.perf_counter()
            # No context given (LangGraph's server, when a request names none): the configured mode.
            update = node(self, state, runtime.context or TurnContext(caf=self.services.default_caf_mode))
            trace: TurnTrace = update.get("trace") or state["trace"]
            ms = (time.perf_counter() - started) * 1000
            update["trace"] = trace.model_copy(update={"nodes": [*trace.nodes, NodeRun(node=name, latency_ms=ms)]})
            return update

        # Not functools.wraps: LangGraph reads the signature to pass `runtime`, and __wrapped__
        # would show it the inner one.
        run.__name__, run.__doc__ = node.__name__, node.__doc__
        return run

    return decorate


_EVERY = 1_000  # "every sentence" for pick_sentences


class AnswerNodes:
    def __init__(self, services: Services):
        self.services = services

    @property
    def settings(self):
        return self.services.settings

    def deadline(self, trace: TurnTrace) -> Deadline:
        """The turn's one time budget for every model call in it, counted from its start."""
        started = datetime.fromisoformat(trace.started_at).timestamp()
        return Deadline(started + self.settings.turn_budget_s)

    # -- screening ---------------------------------------------------------------------------
    @timed("screen_input")
    def screen_input(self, state: ChatState, context: TurnContext) -> dict:
        self.services.identifier.follow_index()  # a rebuilt index is read from this turn on
        state, text, taken = incoming(state)
        turn = state.get("turn", 0) + 1
        trace = TurnTrace(turn=turn, user_message="", caf_mode=context.caf)
        after_crisis = was_crisis(state.get("screen"))
        result = screen_message(
            text, settings=self.settings, resources=self.services.resources,
            screener=self.services.crisis_screener, llm_allowed=context.caf == "on",
            has_conversation=bool(state.get("messages")), previous=state.get("screen"),
            earlier=_said(state, HumanMessage), deadline=self.deadline(trace))
        screen = result.screen
        # "she won't answer me", "the police are coming" after a crisis go on with it: the same
        # words once more would not hear them. A message that says a new danger in so many words
        # (a pattern) gets the reply for its own kind.
        screen.crisis_goes_on = after_crisis and screen.route == "crisis" \
            and screen.crisis_layer.startswith(("model", "context"))
        if screen.crisis_layer == "conversation" or screen.crisis_goes_on:  # that crisis's kind
            screen.crisis_kind = state["screen"].crisis_kind
        trace.user_message, trace.notices = screen.text, list(screen.notices)
        trace.model_calls += result.model_calls
        trace.errors += result.errors
        if screen.route == "notice":
            screen.reply = screen.reply or (reply("empty_message", self.services.profile) if not screen.text else reply(
                "not_english", topics=topics_list(self.services.topic_titles()),
                contacts=contact_lines(self.settings.crisis_contacts)))
        if screen.route == "crisis" and not after_crisis \
                and self._medical_the_sources_answer(screen, _last_user_message(state) or ""):
            # A reaction to a medicine that the knowledge base describes (a fever on clozapine, the
            # signs of NMS) is answered: how to get medical help first, then what the sources say
            # about it, cited. Danger said in so many words (not breathing, an overdose taken: a
            # pattern) keeps the crisis reply.
            screen.route, screen.urgent = "answer", True
        if screen.route == "small_talk" and _resolve_clarification(screen.text, state.get("clarify_candidates") or []):
            screen.route = "answer"  # "2", "yes": the answer to our own "did you mean …?"
        elif screen.route == "answer" and about_this_chat(screen.text):
            screen.route = "small_talk"  # "is this chat private?": about us, not health records
        trace.route = screen.route
        return {"turn": turn, "screen": screen, "trace": trace, "identification": None,
                "card": None, "card_confident": False, "draft": "", "answer": "", **taken}

    # -- sources -----------------------------------------------------------------------------
    @timed("identify_sources")
    def identify_sources(self, state: ChatState, _context: TurnContext) -> dict:
        screen = state["screen"]
        text = screen.text
        chosen = _resolve_clarification(text, state.get("clarify_candidates") or [])
        previous = _last_user_message(state)
        topic = list(state.get("topic") or [])
        match, calls, condensed = None, [], None
        # What the answer is composed for, in the asker's own words (see extractive_answer).
        asked = screen.text
        if chosen is not None:
            # The choice ("2", "yes") answers the question that offered it.
            asked = previous or text
            identification = Identification(outcome="clear", candidates=[chosen], parts=[asked], latency_ms=0.0)
            topic = [asked]
        elif screen.follow_up and adds_no_topic(text) and (last := self._last_answer_sources(state)):
            # "Tell me more", "why?", "how often?": more from the sources of the last answer; on
            # its question, unless this message asks for a kind of answer of its own.
            asked = text if answer_types.wanted(text) else previous or text
            identification = Identification(outcome="clear", candidates=last, parts=[asked], latency_ms=0.0)
        else:
            earlier = _said(state, HumanMessage)
            condensed, calls = self._condensed(state, text) if earlier else (None, [])
            asked = condensed or asked
            # "is it safe…" -> "is clozapine …", unless the reference points into the message itself
            # (a model's rewrite stands alone: `identify` asks only if it matters)
            own_topic = None if condensed else bool(earlier) and self.services.identifier.names_own_topic(text)
            # The topic as retrieval read it: "what is risperdone" names risperidone.
            read_topic = [self.services.identifier.correct_spelling(said) for said in topic]
            text = condensed or (text if own_topic else resolve_references(text, read_topic))
            # "is it free?" -> "is CBT for psychosis free?", still read with the topic
            subject_named = text if condensed or own_topic else with_subject(text, read_topic)
            # A message that opens like a continuation ("and for teenagers?", "what about for
            # kids?") leans on the topic as a reference does, whatever its own words name.
            referred, text = subject_named != text or screen.follow_up, subject_named
            last_sources = [c.source_id for c in self._last_answer_sources(state)]
            identification = self.services.identifier.identify(text, context=" ".join(topic), own_topic=own_topic,
                                                               last_sources=last_sources, referred=referred)
            # A message read with the topic continues it, one that stood alone starts a new one;
            # one that nothing covers leaves the topic as it was, so the next follow-up is read
            # with what was answered ("does it go away?" after "is it permanent?" after NMS, "does
            # it hurt?" after "how much does it cost in America?" after depots).
            if identification.outcome == "none":
                pass
            elif not identification.context and topic and not answer_types.asks_anything(screen.text):
                # A statement adds to the situation rather than starting a new topic ("my review
                # is next week", then "I always freeze and forget what to say", then "any tips?").
                topic = [topic[-1], text]
            elif not identification.context:
                topic = [text]
            else:
                topic = [topic[0], text]
            # Retrieval's sources vouch for a card only for a message read on its own words:
            # "can it be permanent?" after NMS is not about the tardive dyskinesia card's "it".
            found = [c.source_id for c in identification.candidates] \
                if identification.outcome == "clear" and not identification.context else []
            own_case = _own_case(screen)  # whose case and what is asked: read once for the checks below
            # The sources whose own keywords the message says: what a request is about, whatever
            # kind of request its other words make it ("should we stop him smoking weed?"), also
            # when it refers back to a medicine ("my brother is on it and wants to stop smoking").
            said = self._sources_named(text) if own_case else set()
            subjects = self._sources_named(without_medicines(text)) if own_case else set()
            # Matched on its words as the screen read them ("is schizofrenia genetic" is the causes
            # card's question, not the one on what schizophrenia is); texting forms stay as typed.
            match = self.services.cards.match(self.services.identifier.correct_english(text), self.settings.retrieval,
                                              own_case=own_case, requests=screen.boundary_kinds, found=found,
                                              topics=said, subjects=subjects,
                                              continued=last_sources if identification.context else [])
            if match is None and identification.context:
                # Too few words of its own to be near any card ("will i get it too?" after "my mum
                # was just diagnosed"): the message as read with the conversation.
                match = self.services.cards.match(f"{identification.context} {text}", self.settings.retrieval,
                                                  own_case=own_case, requests=screen.boundary_kinds)
                if match is not None and _delivered(match.card, state):
                    match = None  # the card the conversation is about, not an answer to what it asks now
            if match is not None and not own_case and not screen.urgent \
                    and not answer_types.asks_anything(screen.text):
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
            if screen.urgent and not own_case and match is not None and match.card.kind != "answer":
                # Someone unwell now hears how to get help first, not what we cannot do; and after
                # it what the sources say of the situation, not the lead alone.
                match = None
            if own_case and (identification.outcome != "clear" or screen.urgent) \
                    and (match is None or not match.confident):
                # A request about one's own case gets a boundary reply, never a menu or "not
                # covered": from the likeliest sources found, else the nearest boundary card. Someone
                # unwell now gets the nearest card's safety fact ("never restart alone"), whatever
                # the sources found for the symptoms.
                if identification.outcome == "middling" and not screen.urgent:
                    identification = identification.model_copy(update={"outcome": "clear"})
                else:
                    match = self.services.cards.nearest_boundary(text, self.settings.retrieval) or match
            if identification.outcome == "middling" and not own_case and not screen.urgent \
                    and not answer_types.asks_anything(screen.text):
                # "I'm on clozapine" asks nothing, so "did you mean…?" asks back what was never
                # asked: what its likeliest topic is, and what to ask next, answer it instead.
                identification = identification.model_copy(update={"outcome": "clear"})
            if screen.urgent and (lead := self._urgent_card(screen)):
                # Someone unwell now gets how to get help today (the lead's sources go in with
                # what was found), never a menu or "not covered".
                identification = _with_card_sources(identification, lead, self.services, first=False)
            if match is not None and match.confident:
                identification = _with_card_sources(identification, match.card, self.services)
        route = _route(identification, screen, match)
        if match is not None and match.confident and _delivered(match.card, state) \
                and not (match.card.kind == "boundary" and _own_case(screen)):
            # Said in full already: a follow-up matched to it ("why the blood tests?" after the
            # clozapine card) hears what the card did not say, from its sources, not the card again.
            # Not a request about someone's own case ("is she relapsing?" after the warning signs):
            # its boundary reply and safety facts bear saying again.
            match = None
        confident = match is not None and match.confident
        read_as = f"{identification.context} {text}" if identification.context else text
        trace = state["trace"].model_copy(update={
            "identification": identification, "route": route,
            "resolved_question": read_as if read_as != screen.text else "",
            "model_calls": [*state["trace"].model_calls, *calls],
            "card": match.card.id if confident else None})
        return {"identification": identification, "trace": trace, "topic": topic,
                "question": asked,
                "card": match.card.id if match else None, "card_confident": confident}

    def _condensed(self, state: ChatState, text: str) -> tuple[str | None, list[ModelCall]]:
        """The message rewritten by the model as a question that stands alone, or None (no model,
        or its answer was unusable: the offline reading stands); and the call made."""
        if self.services.condenser is None:
            return None, []
        rewritten, call = condense(self.services.condenser, conversation_turns(state.get("messages", [])), text,
                                   deadline=self.deadline(state["trace"]))
        return rewritten, [call] if call is not None else []

    def _card(self, state: ChatState) -> AnswerCard | None:
        wanted = state.get("card")
        return next((c for c in self.services.cards.cards if c.id == wanted), None) if wanted else None

    def _what_the_topic_adds(self, state: ChatState, card: AnswerCard) -> str:
        """After a boundary card, what the source on the request's own topic says of it, when the
        card cites another: "should I stop my meds now I'm pregnant?" hears the pregnancy source
        too, not only why not to stop alone. The topic is read without medicine names, which
        every medicine source shares ("can I stop my olanzapine?" is not about smoking, though
        the smoking source names olanzapine), and must say one of the source's keywords; else the
        source about the medicine the request names (`_medicine_s_own_source`)."""
        asked = state.get("question") or state["screen"].text
        found = self.services.identifier.identify(without_medicines(asked))
        # The topic must be said in so many words: retrieval alone is sure of too much. Of the
        # sources found that the card does not cite, the one whose keywords the message says most
        # ("come off clozapine … because of all the blood tests": the clozapine source, which says
        # both, rather than the health checks source).
        candidates = found.candidates if found.outcome == "clear" else []
        said = {c.source_id: len(self.services.identifier.keywords_said(asked, c.source_id)) for c in candidates
                if c.source_id not in card.sources and c.source_id in state["prompt_source_ids"]}
        topic = max((sid for sid in said if said[sid]), key=lambda sid: said[sid], default="") \
            or self._medicine_s_own_source(state, card)
        if not topic:
            return ""
        doc = self.services.source_text(topic)
        if doc is None:
            return ""
        added = compose_extractive_answer([asked], [doc], self.services.embed, max_sentences=2, quoted=card.body)
        return added.removesuffix(reply("verification_reminder")).strip()

    def _reasons_said(self, state: ChatState, card: AnswerCard | None) -> list[str]:
        """The card's reason sources (`CardMeta.reasons`) whose keywords the request says, read
        without medicine names, and the card does not say in a sentence of that source ("can I cut
        my tablets in half? they make me so restless": restlessness, of the side-effects source). A
        source the card cites may still leave the reason out: "talk to the family doctor (GP) soon"
        [S33] says nothing to "or is this just teenage stuff?"."""
        if card is None or not card.reasons or state["trace"].route != "boundary":
            return []
        asked = self._asked_of(state, card)
        return [sid for sid in card.reasons if self._left_out(asked, card, sid, as_reason=True)]

    def _asked_of(self, state: ChatState, card: AnswerCard) -> str:
        """The question as a card's leftovers are read: spelt as the knowledge base spells it, and
        after a boundary card without medicine names, which every medicine source lists."""
        asked = self.services.identifier.correct_spelling(state.get("question") or state["screen"].text)
        return without_medicines(asked) if card.kind == "boundary" else asked

    def _left_out(self, asked: str, card: AnswerCard, source_id: str, as_reason: bool = False) -> set[str]:
        """The source's keywords the question says and the card does not. For a reason, only the
        card's sentences citing the reason's own source count: "such as avoiding weight gain"
        [S09], on how a medicine is chosen, names the weight a request to switch gives as its
        reason but does not speak to it."""
        said = self.services.identifier.keywords_said
        card_says = _cited_to(card.body, source_id) if as_reason else card.body
        return set(said(asked, source_id)) - set(said(card_says, source_id))

    def _medicine_s_own_source(self, state: ChatState, card: AnswerCard) -> str:
        """The source about the medicine the request is about (the message or the conversation
        names it), when there is one, the card does not cite it, and a sentence of it speaks to the
        request (`medicine_source_floor`): a medicine with a source of its own has safety facts of
        its own ("I'm on clozapine", "can I start back on my normal dose tonight?": after a break of
        two days, not at the usual dose)."""
        request = state["trace"].resolved_question or state["screen"].text
        about = set(named_medicines([request]))
        source = next((source.id for source in self.services.identifier.knowledge_base
                       if about & set(named_medicines([source.title])) and source.id not in card.sources
                       and source.id in state["prompt_source_ids"]), "")
        doc = self.services.source_text(source) if source else None
        # Only when it speaks to the request: the clozapine source has nothing on a drink at a wedding.
        best = pick_sentences([request], [doc], self.services.embed, max_sentences=1, quoted=card.body) if doc else []
        return source if best and best[0].score >= self.settings.retrieval.medicine_source_floor else ""

    def _what_the_card_leaves_out(self, state: ChatState, card: AnswerCard, only: list[str] | None = None) -> str:
        """After a card, the sentence of its sources (or the turn's) on what the message names and
        the card does not: a card answers the common question ("is weed bad for me?"), and "is CBD
        oil ok?" names a keyword of the cannabis source that the card never says. The sentence
        must say that keyword; nothing is added when the card says them all. After a boundary
        card (when no other source's topic was added), it speaks to the reason the request gives
        ("should I go back to the old dose? I've felt dizzy since…"), read without medicine names,
        which every medicine source lists."""
        asked = self._asked_of(state, card)
        missing: dict[str, set[str]] = {}
        docs: dict[str, SourceText] = {}
        # A source in the prompt only for a safety fact (`_kinds_facts`) is not on what was asked.
        found = {c.source_id for c in state["identification"].candidates}
        for_facts = set(citations_in(" ".join(self._kinds_facts(state)))) - found
        retrieved = [s for s in state["prompt_source_ids"] if s not in for_facts]
        if only is None:
            pool = [*card.sources, *retrieved]
        elif only:
            # The turn's sources may speak to the reason too, and better than the reason source's
            # list: "if weight gain worries you, talk to your prescriber" [S23].
            pool = [*only, *retrieved]
        else:
            return ""
        for sid in dict.fromkeys(pool):
            unsaid = self._left_out(asked, card, sid, as_reason=only is not None)
            if unsaid and (doc := self.services.source_text(sid)):
                missing[sid], docs[sid] = unsaid, doc
        # For a reason, every sentence of its source is a candidate: the one that names it may be
        # far from the top ("so restless i want to climb the walls" is nearest tardive dyskinesia).
        most = {"max_sentences": _EVERY, "per_source": _EVERY} if only is not None else {}
        for picked in sorted(pick_sentences([asked], list(docs.values()), self.services.embed, quoted=card.body,
                                            **most), key=lambda p: -p.score):
            if picked.leans_back or not set(self.services.identifier.keywords_said(picked.text, picked.source_id)) \
                    & missing[picked.source_id]:
                continue
            # With what leans on it ("CBD is another chemical in cannabis. It does not make people
            # high…"); of a list nothing leans on, the items that say it ("Common side effects:
            # dizziness: …", not all seven).
            found = passages(docs[picked.source_id].text)
            passage, sentences = found[picked.position], [p.text for p in found]
            leaning = sentences[picked.position + 1:leaning_run(sentences, picked.position)]
            keep = [i for i, item in enumerate(passage.items)
                    if set(self.services.identifier.keywords_said(item, picked.source_id)) & missing[picked.source_id]]
            if leaning:
                first = passage.text
            elif keep:
                first = passage.with_items(keep)
            else:
                first = picked.text
            return " ".join(f"{sentence} [{picked.source_id}]" for sentence in [first, *leaning])
        return ""

    def _kinds_facts(self, state: ChatState) -> list[str]:
        """On the boundary route, the safety fact of each kind of request the screen read the
        message as (its likeliest kind, and any nearly as likely: see `CardMeta.safety_fact`),
        whichever card or sources answer it: "can I tell my girlfriend it's fine to quit her
        risperidone?" gets the card on someone else's medicine (consent) and hears that an
        antipsychotic is never stopped alone; "im drooling on clozapine, can i cut the dose
        myself?" gets the clozapine card's side effects, then that the dose is not changed alone.
        A kind no card answers gets the sources' own sentence for it (`SourcedFacts`), else the
        profile's general one."""
        if state["trace"].route != "boundary":
            return []
        cards = self.services.cards
        facts = [cards.safety_facts.get(kind) if kind in cards.kinds_answered
                 else self.services.sourced_facts.fact_for(kind) or self.services.profile.safety_fact
                 for kind in state["screen"].boundary_kinds]
        return list(dict.fromkeys(f for f in facts if f))

    def _unsaid_facts(self, state: ChatState, reply_so_far: str) -> str:
        """The kinds' safety facts (`_kinds_facts`) that the reply does not already say."""
        said = {strip_citations(s) for s in split_sentences(reply_so_far)}
        return " ".join(f for f in self._kinds_facts(state) if strip_citations(f) not in said)

    def _medical_the_sources_answer(self, screen: InputScreen, before: str) -> bool:
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

    def _urgent_card(self, screen: InputScreen) -> AnswerCard | None:
        """The urgent card for the screen's reading of the situation (a medical emergency: medical
        help), else the general one (help today from the mental health team)."""
        urgent = [c for c in self.services.cards.cards if c.kind == "urgent"]
        situation = screen.crisis_kind if screen.crisis_layer else ""  # read as a crisis, then answered
        return (next((c for c in urgent if situation and situation in c.requests), None)
                or next((c for c in urgent if not c.requests), None))

    def _lead(self, state: ChatState) -> str:
        """What an answer about someone unwell now opens with: how to get help today (the urgent
        card), before anything the sources say about the situation."""
        card = self._urgent_card(state["screen"])
        delivered = state.get("card_confident") and state.get("card") == getattr(card, "id", None)
        if not state["screen"].urgent or card is None or state["trace"].route not in ("answer", "boundary") \
                or delivered:
            return ""
        return card.body

    def _card_body(self, card: AnswerCard, state: ChatState) -> str:
        """A general card's sentences with the one that answers this turn's question first; a
        boundary card's opening on what the bot cannot do, when it fits the request."""
        if card.kind == "boundary":
            kinds = set(state["screen"].boundary_kinds) & self.services.cards.kinds_answered
            # A card's opening names what it cannot do for its own kinds of request ("a particular
            # missed dose"); chosen for a request the screen read as none of them (by its topic's
            # words, or as the nearest card), it opens with what fits any request instead.
            fits = not kinds or kinds & set(card.requests)
            return card.body if fits else card.with_opening(reply("boundary_opening"))
        if card.kind != "answer":
            return card.body
        return led_by_answer(card.body, state.get("question") or state["screen"].text, self.services.embed)

    def _last_answer_sources(self, state: ChatState) -> list[Candidate]:
        in_play = state.get("sources_in_play") or {}
        latest = max(in_play.values(), default=0)
        return [Candidate(source_id=sid, title=doc.title, confidence=1.0)
                for sid, last in in_play.items() if last == latest and (doc := self.services.source_text(sid))]

    @timed("enhance_prompt")
    def enhance_prompt(self, state: ChatState, _context: TurnContext) -> dict:
        """Chosen sources first, then sources still in play from recent turns, under a budget;
        pending judge warnings; the recent conversation."""
        turn, prompting = state["turn"], self.settings.prompting
        chosen = [c.source_id for c in state["identification"].candidates]
        required = set(card.sources) if (card := self._card(state)) else set(chosen[:1])
        required |= set(citations_in(self._lead(state)))  # an urgent answer's lead cites them
        # and so do the safety facts of the request's kinds (`_kinds_facts`), found by retrieval
        # or not: a reply quoting a fact whose source the budget left out is rejected
        facts = citations_in(" ".join(self._kinds_facts(state)))
        reasons = self._reasons_said(state, card)  # and the sources of the reason it gives
        required |= {*facts, *reasons}
        recent = [sid for sid, last in sorted((state.get("sources_in_play") or {}).items(),
                                              key=lambda item: -item[1])
                  if last >= turn - prompting.keep_sources_for_turns and sid not in chosen]
        included, dropped, budget = [], [], prompting.source_token_budget
        for sid in dict.fromkeys([*chosen, *facts, *reasons, *recent]):
            doc = self.services.source_text(sid)
            cost = count_tokens_approximately([HumanMessage(doc.text)]) if doc else 0
            if doc and (cost <= budget or sid in required):  # the best source (or a card's) always goes in
                included.append(doc)
                budget -= cost
            else:
                dropped.append(sid)
        warnings = [w for w in state.get("warnings") or [] if w.active_at(turn)]
        system = chat_system_prompt([(d.id, d.title, d.text) for d in included],
                                    [(w.rule, w.message) for w in warnings], self.services.profile)
        recent = state.get("messages", [])[-2 * prompting.history_turns:] if prompting.history_turns else []
        history = trim_messages(recent, max_tokens=prompting.history_token_budget, strategy="last",
                                token_counter=count_tokens_approximately, start_on="human")
        prompt = [SystemMessage(system), *history, HumanMessage(state["screen"].text)]
        trace = state["trace"].model_copy(update={
            "prompt_sources": [d.id for d in included], "dropped_sources": dropped,
            "warnings_in_prompt": [w.message for w in warnings]})
        return {"prompt": prompt, "prompt_source_ids": [d.id for d in included], "trace": trace}

    # -- generation --------------------------------------------------------------------------
    @timed("generate")
    def generate(self, state: ChatState, _context: TurnContext) -> dict:
        trace = state["trace"].model_copy(deep=True)
        card = self._card(state)
        vetted = card is not None and state.get("card_confident")
        if vetted and (self.services.chat is None or card.kind == "boundary"):
            draft, trace.generator = self._card_reply(state, card), "card"
        elif self.services.chat is None:
            draft, trace.generator = self.extractive_answer(state), "extractive"
        else:
            try:
                draft, call = call_text(self.services.chat, state["prompt"], purpose="draft",
                                        deadline=self.deadline(trace))
                trace.model_calls.append(call)
                trace.generator = "llm"
                # A model's boundary reply may leave out the request's safety facts: they are
                # ours to say, not its to forget (their sources are in its prompt).
                draft = _before_closing(draft, self._unsaid_facts(state, draft))
            except ModelError as error:
                if error.call:
                    trace.model_calls.append(error.call)
                trace.errors.append(str(error))
                over = self.deadline(trace).expired
                trace.notices.append(reply("over_budget" if over else "model_unavailable"))
                draft, trace.generator = self.extractive_answer(state), "extractive"
        draft = trace.draft = _joined(self._lead(state), draft)
        trace.citations = _unique(citations_in(draft))
        trace.invalid_citations = [c for c in trace.citations if c not in state["prompt_source_ids"]]
        return {"draft": draft, "trace": trace}

    def _card_reply(self, state: ChatState, card: AnswerCard) -> str:
        """A card as this turn's reply: a boundary card, then the safety facts of the request's
        kinds it does not say, then what the request's topic adds; a general card (framed as a
        boundary reply on that route) with those facts and what it leaves out before its closing."""
        draft = card_draft(card, state["trace"].route == "boundary", self._card_body(card, state))
        if card.kind == "boundary":
            reasons = self._reasons_said(state, card)
            return _joined(draft, self._unsaid_facts(state, draft),
                           self._what_the_card_leaves_out(state, card, only=reasons)
                           or self._what_the_topic_adds(state, card) or self._what_the_card_leaves_out(state, card))
        return _before_closing(draft, _joined(self._unsaid_facts(state, draft),
                                              self._what_the_card_leaves_out(state, card)))

    def _sources_named(self, text: str) -> set[str]:
        """The sources whose own keywords the message says ("pregnant", "weight gain")."""
        return {source.id for source in self.services.identifier.knowledge_base
                if self.services.identifier.keywords_said(text, source.id)}

    def crisis_reminder(self, state: ChatState) -> str:
        """Soon after a crisis message, every answer ends with the crisis contacts again (fixed
        text, added after the filter): the person asked something else, but may not be safe."""
        kind = latest_crisis_kind(_said(state, HumanMessage), self.services.resources)
        if kind is None:
            return ""
        # After a health problem on a medicine: it still needs a doctor today ("can I wait till
        # Monday?"), which "if you are not safe" does not say.
        name = "crisis_medical_reminder" if kind == "medical_emergency" else "crisis_reminder"
        return reply(name, contacts=contact_lines(self.settings.crisis_contacts))

    def extractive_answer(self, state: ChatState) -> str:
        identification = state["identification"]
        # A follow-up is answered on its own words ("is it free?", "is it safe with alcohol?"):
        # what it is about (the topic, the medicine named before) already chose the sources. A
        # model's rewrite that stands alone ("is family intervention free?") is its own words;
        # "tell me more" is answered on the question before it (identify_sources sets `question`).
        asked = state.get("question") or state["screen"].text
        parts = identification.parts if len(identification.parts) > 1 else [asked]
        if identification.context and says_little(asked) and not refers_back(asked) \
                and not self._sources_named(asked):
            # "any tips?" after "I always freeze and forget what to say": what it asks is all in
            # the conversation, so its answer is chosen by what the conversation said with it too.
            # A message with words of its own ("then who do I talk to?") is answered on them.
            parts = [asked, f"{identification.context} {asked}"]
        # The best source for each part of the question first (candidates come best first).
        chosen: list[str] = []
        for part in parts:
            best = next((c.source_id for c in identification.candidates if c.part in (part, None)), None)
            if best and best not in chosen:
                chosen.append(best)
        # Then the other sources found for it, up to three in all: later ones must earn their
        # sentences. Sources still in play from earlier turns are context for a model, not
        # material for this answer ("does it hurt?" about an injection is not about clozapine).
        given = state["prompt_source_ids"]
        found = [*chosen, *(c.source_id for c in identification.candidates)]
        usable = list(dict.fromkeys(sid for sid in found if sid in given))[:3]
        docs = [d for sid in usable if (d := self.services.source_text(sid))]
        # A source about another medicine adds nothing true of the one asked about, and its
        # sentences would read as said of it; the best source stays, whatever it is.
        about = state["trace"].resolved_question or asked
        docs = docs[:1] + [d for d in docs[1:] if not about_another_medicine(d.title, about)]
        continues = state["screen"].follow_up or bool(identification.context)
        if docs and not continues and not answer_types.asks_anything(asked) and state["trace"].route == "answer" \
                and not state["screen"].urgent:  # someone unwell now needs what to do, not an overview
            # It only says something ("my brother started clozapine 2 weeks ago"): what its topic
            # is; the suggestions offer what to ask next.
            return "\n\n".join([overview(docs[0]), reply("verification_reminder")])
        # "Tell me more" gets what was not said yet; a follow-up that asks something of its own
        # hears its best answer, said before or not ("does it need blood tests?" after the
        # clozapine card, "and after a first episode specifically?").
        earlier = _said(state, AIMessage) if state["screen"].follow_up else []
        more = adds_no_topic(state["screen"].text)
        said = earlier if more else []
        # "can it be permanent?" continuing the conversation: "it" is what the last answer was about.
        # What it was about is what that answer led with, not all it said ("whats NMS" answered by
        # a card on NMS and tardive dyskinesia: "it" is NMS).
        focus = _lead_of((_said(state, AIMessage) or [""])[-1]) if continues and refers_back(asked) else ""
        # The medicine "it" stands for ("does it need blood tests?" after clozapine) orders what is
        # quoted as a medicine named would; the words stay the message's own. The message as read
        # with its references resolved is the topic's latest follow-up (see identify_sources).
        read = (state.get("topic") or [""])[-1] if identification.context else ""
        meant_medicines = medicines_named(read) - medicines_named(asked) if focus else frozenset()
        # Sentences are chosen by the words meant ("alchol" -> "alcohol"), as retrieval read them.
        meant = [self.services.identifier.correct_spelling(p) for p in parts]
        answer = compose_extractive_answer(meant, docs, self.services.embed, already_said=said,
                                           said_before=[] if more else earlier, focus=focus,
                                           quoted=self._lead(state),  # the lead says how to get help
                                           meant_medicines=meant_medicines)
        if state["trace"].route == "boundary":  # what the bot cannot do, the facts, who to ask
            body = answer.removesuffix(reply("verification_reminder")).strip()
            answer = _joined(reply("boundary_opening"), body, self._unsaid_facts(state, body),
                             reply("boundary_who_to_ask"))
        return answer

    @timed("critical_analysis")
    def critical_analysis(self, state: ChatState, context: TurnContext) -> dict:
        """Apply the filter's outcome. It fails closed: what goes out is a text the filter passed
        in this turn, or a fixed reply. With the filter off (a comparison condition), the draft
        goes out unless it cites sources it was not given."""
        trace = state["trace"].model_copy(deep=True)
        closing = trace.closing = self.crisis_reminder(state)
        if context.caf == "off":
            if trace.invalid_citations:
                trace.fallback_used = True
                trace.errors.append(f"draft cited sources it was not given: {trace.invalid_citations}")
                return {"answer": _joined(self._lead(state), self.extractive_answer(state), closing),
                        "trace": trace}
            return {"answer": _joined(state["draft"], closing), "trace": trace}

        def fallback() -> str:  # a model's rejected draft gives way to the card or the extractive answer
            card = self._card(state)
            boundary = trace.route == "boundary"
            if card is not None and not set(card.sources) <= set(state["prompt_source_ids"]):
                # A card only near the words ("do I have schizophrenia?" for "is there anything i
                # can do so i dont get it") that cites sources this turn was not given would fail
                # the filter in turn: what was found answers instead.
                card = None
            if card is not None and boundary and card.kind == "answer" and not state.get("card_confident"):
                # Nor, for a request about one's own case, a general card only near its words ("tell
                # me what dose of quetiapine to take" is near "what kind of medicine is quetiapine"):
                # the boundary reply composed from what was found keeps what we cannot do and who to ask.
                card = None
            return _joined(self._lead(state), self._card_reply(state, card) if card
                           else self.extractive_answer(state))

        deadline = self.deadline(trace)
        context_for_judges = draft_context(state, self.services).model_copy(update={"closing": closing})
        outcome = self.services.caf.review(context_for_judges, turn=state["turn"],
                                           mode=context.caf, deadline=deadline,
                                           fallback=fallback if trace.generator == "llm" else None)
        report = outcome.report
        trace.caf, trace.fallback_used = report, report.fallback_used
        trace.model_calls += report.model_calls
        trace.errors += report.errors
        answer = outcome.text
        if answer is None:  # nothing passed: the user gets a fixed reply, and the trace says so
            answer, trace.generator = self.withheld_reply(state), "fixed"
        late = reply("over_budget")
        if report.fallback_used and outcome.text is not None and deadline.expired and late not in trace.notices:
            trace.notices.append(late)
        return {"answer": _joined(answer, closing), "trace": trace,
                "warnings": [*(state.get("warnings") or []), *outcome.warnings]}

    def withheld_reply(self, state: ChatState) -> str:
        """When no draft passed the filter: what the bot cannot answer here, where the topic is
        covered, and who to ask."""
        titles = [d.title for sid in state.get("prompt_source_ids") or []
                  if (d := self.services.source_text(sid))]
        return reply("withheld", topics="; ".join(titles) or topics_list(self.services.topic_titles()))

    # -- side exits --------------------------------------------------------------------------
    @timed("crisis_response")
    def crisis_response(self, state: ChatState, _context: TurnContext) -> dict:
        trace = state["trace"].model_copy(update={"generator": "fixed", "route": "crisis"})
        screen = state["screen"]
        situation = ("medical" if screen.crisis_kind == "medical_emergency"
                     else "overdose" if screen.crisis_kind == "overdose_taken"
                     else "someone_else" if screen.crisis_kind in _SOMEONE_ELSE_IN_DANGER
                     else "harm" if screen.crisis_kind == "harm_to_others" else "")
        continued = screen.crisis_layer == "conversation" or screen.crisis_goes_on
        return {"answer": crisis_reply(self.settings.crisis_contacts, continued=continued, situation=situation,
                                       language=screen.language, profile=self.services.profile,
                                       warning_signs=self.services.medicines.warning_signs(screen.text)),
                "trace": trace}

    @timed("small_talk")
    def small_talk(self, state: ChatState, _context: TurnContext) -> dict:
        trace = state["trace"].model_copy(update={"generator": "fixed", "route": "small_talk"})
        asked, questions = _asked(state), list(self._headline_questions().values())
        screen = state["screen"]
        if reminder := self.crisis_reminder(state):
            # "ok" soon after someone said they or another were in danger: not example questions.
            return {"answer": reminder, "trace": trace}
        models_used = any(self.settings.models.for_role(role).enabled for role in ROLES)
        # Its kind read by its words as the screen read them ("thnks" is "thanks").
        said = self.services.identifier.correct_english(screen.text)
        answer = small_talk_reply(said, questions, asked, seed=state["turn"], learned=screen.small_talk_kind,
                                  models_used=models_used, profile=self.services.profile)
        return {"answer": answer, "trace": trace}

    @timed("clarify")
    def clarify(self, state: ChatState, _context: TurnContext) -> dict:
        identification = state["identification"]
        trace = state["trace"].model_copy(update={"generator": "fixed"})
        # Soon after a crisis, a menu or "not covered" ends with the contacts too ("can she wait
        # till tomorrow?" after a fever on clozapine must not hear only what we do not cover).
        reminder = self.crisis_reminder(state)
        if identification.outcome == "middling" and identification.candidates:
            options = identification.candidates[: self.settings.retrieval.top_k]
            lines = "\n".join(f"{n}. {c.title}" for n, c in enumerate(options, 1))
            return {"answer": _joined(reply("clarify", options=lines), reminder), "clarify_candidates": options,
                    "trace": trace}
        return {"answer": _joined(self._not_covered(state), reminder), "clarify_candidates": [], "trace": trace}

    def _not_covered(self, state: ChatState) -> str:
        """"Not covered", with who can help. In a conversation, about what it is about ("is it
        permanent?" after NMS: what we have on side effects does not say); otherwise with the
        topics we cover, listed in full once per conversation. Someone who only told us something
        ("my sister got diagnosed yesterday") asked nothing we failed to cover: they hear what
        they could ask, nearest what they said first."""
        if state["identification"].context and (last := self._last_answer_sources(state)):
            return reply("no_match_in_topic", titles=" and ".join(f'"{c.title}"' for c in last[:2]))
        screen = state["screen"]
        if not screen.urgent and not answer_types.asks_anything(screen.text):
            examples = self._questions_near(screen.text, _asked(state))
            return reply("statement_not_covered", self.services.profile,
                         examples="\n".join(f"- {q}" for q in examples))
        listed = reply("no_match", topics=topics_list(self.services.topic_titles()))
        if any(listed in said for said in _said(state, AIMessage)):
            return reply("no_match_again")
        return listed

    def _questions_near(self, text: str, asked: set[str], count: int = 3) -> list[str]:
        """Up to `count` headline questions (each source's first) not yet asked: of the sources
        retrieval ranks nearest `text`, however unsure, then the knowledge base's core topics."""
        headlines = self._headline_questions()
        near = [sid for sid, confidence in self.services.identifier.score([text])[0]
                if confidence >= RELATED_FROM and sid in headlines]
        questions = [headlines[sid] for sid in dict.fromkeys([*near, *headlines])]
        return [q for q in questions if q.lower() not in asked][:count]

    def _headline_questions(self) -> dict[str, str]:
        """Each source's headline question (the first of its `questions:`), in the knowledge
        base's order: the examples small talk and a statement nothing covers offer."""
        return {source.id: source.questions[0] for source in self.services.identifier.knowledge_base
                if source.questions}

    # -- delivery ----------------------------------------------------------------------------
    @timed("respond")
    def respond(self, state: ChatState, _context: TurnContext) -> dict:
        screen, trace, turn = state["screen"], state["trace"].model_copy(deep=True), state["turn"]
        answer = screen.reply if screen.route == "notice" else state["answer"]
        if trace.notices and screen.route != "notice":
            answer = "\n\n".join([*trace.notices, answer])
        # The sources the user was shown: a card or the extractive answer sent instead of a rejected
        # draft cites others than the draft did.
        trace.answer, trace.citations = answer, citations_in(answer)
        update: dict = {"answer": answer, "trace": trace,
                        "warnings": [w for w in state.get("warnings") or [] if w.expires_after_turn > turn]}
        if trace.route != "clarify":
            update["clarify_candidates"] = []
        if added := exchange_messages(screen.text, answer, state.get("message_id")):
            update["messages"] = added
        in_play = dict(state.get("sources_in_play") or {})
        for sid in citations_in(answer):
            if sid in (state.get("prompt_source_ids") or []):
                in_play[sid] = turn
        update["sources_in_play"] = in_play
        return update


def _route(identification: Identification, screen: InputScreen, match: CardMatch | None) -> Route:
    """After identification: "did you mean", not covered, a boundary reply to a request about
    the person's own case (the screen's reading, or a matching boundary card), or an answer."""
    if identification.outcome != "clear":
        return "clarify" if identification.outcome == "middling" else "no_match"
    if _own_case(screen) or (match is not None and match.confident and match.card.kind == "boundary"):
        return "boundary"
    return "answer"


def _asked(state: ChatState) -> set[str]:
    """What the user has said in this conversation, lower-cased: questions not to offer again."""
    return {m.lower() for m in _said(state, HumanMessage)}


def _delivered(card: AnswerCard, state: ChatState) -> bool:
    """The card's answer was given earlier in this conversation (every sentence of it is in one
    earlier reply, in whatever order it was delivered)."""
    sentences = split_sentences(card.body)
    return any(all(s in answer for s in sentences) for answer in _said(state, AIMessage))


def _own_case(screen: InputScreen) -> bool:
    """A request about the writer's own case, made afresh (a follow-up continues the last topic).
    Someone unwell now asks about their own case too ("stopped my risperidone and the voices are
    back, what do I do?"): what to do about it is for their team, and the reply leads with how to
    get help today (`_lead`). Not when all that is asked is who to turn to (the contacts answer
    that), nor what to do for someone else unwell now (the screen's reading of whose situation it
    is): how to get help answers it. A request of its own about them ("is he relapsing?", "could
    this be schizophrenia?") keeps its boundary reply, led by how to get help today."""
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
    return screen.crisis_kind in _SOMEONE_ELSE_IN_DANGER or bool(_ANOTHER_PERSON.search(screen.text))


def card_draft(card: AnswerCard, boundary: bool = False, body: str = "") -> str:
    """A card as the draft (`body`: its sentences in the order delivered, see `led_by_answer`).
    On the boundary route a general card is framed as one: what the bot cannot do first, who to
    ask last."""
    body = body or card.body
    if boundary and card.kind == "answer":
        return "\n\n".join([reply("boundary_opening"), body, reply("boundary_who_to_ask")])
    return card.draft(reply("verification_reminder"), body)


def _with_card_sources(found: Identification, card: AnswerCard, services: Services, *,
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


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _said(state: ChatState, kind: type[HumanMessage] | type[AIMessage]) -> list[str]:
    """What the user (`HumanMessage`) or the bot (`AIMessage`) said so far, oldest first."""
    return [str(m.content) for m in state.get("messages", []) if isinstance(m, kind)]


def _last_user_message(state: ChatState) -> str | None:
    humans = _said(state, HumanMessage)
    return humans[-1] if humans else None


def _resolve_clarification(text: str, offered: list[Candidate]) -> Candidate | None:
    """After "did you mean …?", a reply of "2", "yes" or a title picks that candidate."""
    if not offered:
        return None
    if match := _CHOICE.match(text):
        index = int(match.group(1)) - 1
        return offered[index] if index < len(offered) else None
    if _YES.match(text) and len(text.split()) <= 4:
        return offered[0]
    lowered = text.lower().strip(" ?.!")
    return next((c for c in offered if lowered and lowered in c.title.lower()), None)


def draft_context(state: ChatState, services: Services) -> DraftContext:
    """What the judges see of this turn: the message, the draft, the sources given, recent turns."""
    sources = [d for sid in state.get("prompt_source_ids") or [] if (d := services.source_text(sid))]
    return DraftContext(user=state["screen"].text, draft=state["draft"], sources=sources,
                        history=conversation_turns(state.get("messages", [])))


def exchange_messages(user: str, answer: str, message_id: str | None = None) -> list[AnyMessage]:
    """What a turn adds to the conversation (its cleaned message, under the id the client gave it,
    and the answer delivered): an empty message leaves the conversation as it was."""
    return [HumanMessage(user, id=message_id), AIMessage(answer)] if user else []


def incoming(state: ChatState) -> tuple[ChatState, str, dict]:
    """This turn's message, and the state as the nodes read it, the conversation before this turn.

    The message is the last of `messages` when that is the user's (LangGraph's usual input; a turn
    always ends with the answer, so it can only be this turn's), else `user_input`. It is taken out
    of the conversation until `respond` puts its cleaned copy back, so every node reads the
    conversation as in-process turns give it. Returns the state without it, its text, and the
    update that takes it out and empties `user_input`."""
    messages = list(state.get("messages") or [])
    if messages and isinstance(messages[-1], HumanMessage):
        message = messages.pop()
        return ({**state, "messages": messages}, str(message.text),
                {"messages": [RemoveMessage(id=message.id)], "message_id": message.id, "user_input": ""})
    return state, state.get("user_input", ""), {"message_id": None, "user_input": ""}


def conversation_turns(messages: list[AnyMessage], last: int = 6) -> list[Turn]:
    """The conversation's last messages as the user saw them (what the judges see of it)."""
    return [Turn(role="user" if isinstance(m, HumanMessage) else "assistant", content=str(m.content))
            for m in messages[-last:]]


def _lead_of(answer: str) -> str:
    """An answer's first sentence and those that lean on it ("Tardive dyskinesia is… It causes…
    It can be long-lasting…"): what it answered."""
    sentences = split_sentences(answer)
    return " ".join(sentences[:leaning_run(sentences, 0)])


def _before_closing(draft: str, addition: str) -> str:
    """`addition` as the last paragraph of an answer's facts: before its closing paragraph (the
    reminder to check with the care team, or a boundary reply's who to ask)."""
    for closing in (reply("verification_reminder"), reply("boundary_who_to_ask")):
        if addition and draft.endswith(closing):
            return _joined(draft.removesuffix(closing).rstrip(), addition, closing)
    return _joined(draft, addition)


def _joined(*parts: str) -> str:
    return "\n\n".join(part for part in parts if part)


def _cited_to(text: str, source_id: str) -> str:
    """The sentences of `text` that cite `source_id`."""
    return " ".join(s for s in split_sentences(text) if source_id in citations_in(s))
