"""The answer graph's nodes. Each takes the state and returns only what it changes.

screen_input → identify_sources → enhance_prompt → generate → critical_analysis → respond,
with side exits: crisis messages go to `crisis_response`, small talk to `small_talk`, unclear or
unknown questions to `clarify`. Where a turn goes after its sources are identified is decided in
`app.graph.routing`; replies are composed in `app.generation.composition`.
Every node also receives the turn's `TurnContext` (LangGraph's runtime context): the filter's mode
is chosen per call, not per chatbot.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately, trim_messages
from langgraph.runtime import Runtime

from app.core import answer_types
from app.core.config import ROLES
from app.core.errors import ModelError
from app.core.models import Deadline, call_text
from app.core.records import NodeRun, TurnTrace
from app.core.text import citations_in
from app.generation.composition import Composer, Turn, before_closing, joined
from app.generation.not_covered import headline_questions, medicine_notice, not_covered, withheld
from app.graph.conversation import (
    asked,
    conversation_turns,
    crises_with,
    draft_context,
    exchange_messages,
    incoming,
    last_user_message,
    recent_crises,
    resolve_clarification,
    said,
)
from app.graph.routing import SOMEONE_ELSE_IN_DANGER, after_screen, decide
from app.graph.services import Services
from app.graph.sources import SourceReader
from app.graph.state import ChatState, TurnContext
from app.kb.cards import AnswerCard
from app.prompts import chat_system_prompt, contact_lines, crisis_reply, reply, topics_list
from app.retrieval.references import refers_back
from app.screen import adds_no_topic, says_little, screen_message, was_crisis
from app.small_talk import about_this_chat, small_talk_reply

__all__ = ["AnswerNodes", "conversation_turns", "draft_context", "exchange_messages", "incoming"]


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


class AnswerNodes:
    def __init__(self, services: Services):
        self.services = services

    @property
    def settings(self):
        return self.services.settings

    @property
    def sources(self) -> SourceReader:
        return SourceReader(self.services)

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
            earlier=said(state, HumanMessage), deadline=self.deadline(trace))
        screen = result.screen
        # "she won't answer me", "the police are coming" after a crisis go on with it: the same
        # words once more would not hear them. A message that says a new danger in so many words
        # (a pattern) gets the reply for its own kind.
        screen.crisis_goes_on = after_crisis and screen.route == "crisis" \
            and screen.crisis_layer.startswith(("model", "context"))
        if screen.crisis_layer == "conversation" or screen.crisis_goes_on:  # that crisis's kind
            screen.crisis_kind = state["screen"].crisis_kind
        trace.user_message, trace.notices = screen.text, list(screen.notices)
        trace.crisis_cleared = screen.crisis_cleared
        trace.model_calls += result.model_calls
        trace.errors += result.errors
        if screen.route == "notice":
            screen.reply = screen.reply or (reply("empty_message", self.services.profile) if not screen.text else reply(
                "not_english", topics=topics_list(self.services.topic_titles()),
                contacts=contact_lines(self.settings.crisis_contacts)))
        crises = crises_with(recent_crises(state, self.services, before=turn), turn, screen)
        answered = screen.route == "crisis" and not after_crisis \
            and self.sources.medical_the_sources_answer(screen, last_user_message(state) or "")
        if answered:
            screen.urgent = True  # answered with how to get medical help first
        screen.route = trace.route = after_screen(
            screen.route, sources_answer_emergency=answered, about_us=about_this_chat(screen.text),
            chose_from_menu=resolve_clarification(screen.text, state.get("clarify_candidates") or []) is not None)
        return {"turn": turn, "screen": screen, "crises": crises, "trace": trace, "identification": None,
                "card": None, "card_confident": False, "draft": "", "answer": "", **taken}

    # -- sources -----------------------------------------------------------------------------
    @timed("identify_sources")
    def identify_sources(self, state: ChatState, _context: TurnContext) -> dict:
        """Retrieval's reading of the message and the cards it matches (`Readings`); `decide` keeps
        a card, settles the identification's outcome and chooses the route."""
        read = self.sources.read(state, self.deadline(state["trace"]))
        decision = decide(read.readings)
        identification = self.sources.with_decision(read.identification, decision)
        match, confident = decision.card, decision.confident
        read_as = f"{identification.context} {read.text}" if identification.context else read.text
        notices = list(state["trace"].notices)
        if decision.route in ("answer", "boundary") \
                and (notice := medicine_notice(read.text, self.services.identifier.knowledge_base.medicines)):
            notices.append(notice)
        trace = state["trace"].model_copy(update={
            "identification": identification, "route": decision.route, "notices": notices,
            "resolved_question": read_as if read_as != state["screen"].text else "",
            "model_calls": [*state["trace"].model_calls, *read.calls],
            "card": match.card.id if confident else None})
        return {"identification": identification, "trace": trace, "topic": read.topic, "question": read.question,
                "screen": state["screen"].model_copy(update={"boundary_kinds": read.requests}),  # as read in context
                "card": match.card.id if match else None, "card_confident": confident}

    def _card(self, state: ChatState) -> AnswerCard | None:
        wanted = state.get("card")
        return next((c for c in self.services.cards.cards if c.id == wanted), None) if wanted else None

    def _lead(self, state: ChatState) -> str:
        """What an answer about someone unwell now opens with: how to get help today (the urgent
        card), before anything the sources say about the situation."""
        card = self.sources.urgent_card(state["screen"])
        given = state.get("card_confident") and state.get("card") == getattr(card, "id", None)
        if not state["screen"].urgent or card is None or state["trace"].route not in ("answer", "boundary") \
                or given:
            return ""
        return card.body

    @property
    def composer(self) -> Composer:
        """What composes replies, over this chatbot's retrieval, sources and cards."""
        services = self.services
        return Composer(reader=services.identifier, source_text=services.source_text, embed=services.embed,
                        safety_facts=services.cards.safety_facts, kinds_answered=services.cards.kinds_answered,
                        fact_for=lambda kind: services.sourced_facts.fact_for(kind) or services.profile.safety_fact,
                        medicine_source_floor=self.settings.retrieval.medicine_source_floor)

    def _turn(self, state: ChatState) -> Turn:
        """What this turn's reply is composed for, as the state has it so far."""
        screen, trace = state["screen"], state["trace"]
        question = state.get("question") or screen.text
        return Turn(message=screen.text, question=question, route=trace.route,
                    identification=state.get("identification"), resolved=trace.resolved_question,
                    boundary_kinds=tuple(screen.boundary_kinds), given=tuple(state.get("prompt_source_ids") or []),
                    follow_up=screen.follow_up, urgent=screen.urgent, topic=tuple(state.get("topic") or []),
                    answers_before=tuple(said(state, AIMessage)), lead=self._lead(state),
                    adds_no_topic=adds_no_topic(screen.text), says_little=says_little(question),
                    refers_back=refers_back(question))

    @timed("enhance_prompt")
    def enhance_prompt(self, state: ChatState, _context: TurnContext) -> dict:
        """Chosen sources first, then sources still in play from recent turns, under a budget;
        pending judge warnings; the recent conversation."""
        turn, prompting = state["turn"], self.settings.prompting
        chosen = [c.source_id for c in state["identification"].candidates]
        required = set(card.sources) if (card := self._card(state)) else set(chosen[:1])
        turn_so_far = self._turn(state)
        required |= set(citations_in(turn_so_far.lead))  # an urgent answer's lead cites them
        # and so do the safety facts of the request's kinds (`kinds_facts`), found by retrieval
        # or not: a reply quoting a fact whose source the budget left out is rejected
        facts = citations_in(" ".join(self.composer.kinds_facts(turn_so_far)))
        reasons = self.composer.reasons_said(turn_so_far, card)  # and the sources of the reason it gives
        # and the source of the medicine a request names, whose safety facts may be added to its card
        medicine = [sid] if (sid := self.composer.medicine_source(turn_so_far, card)) else []
        required |= {*facts, *reasons, *medicine}
        recent = [sid for sid, last in sorted((state.get("sources_in_play") or {}).items(),
                                              key=lambda item: -item[1])
                  if last >= turn - prompting.keep_sources_for_turns and sid not in chosen]
        included, dropped, budget = [], [], prompting.source_token_budget
        for sid in dict.fromkeys([*chosen, *facts, *reasons, *medicine, *recent]):
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
            draft, trace.generator = self.composer.card_reply(self._turn(state), card), "card"
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
                draft = before_closing(draft, self.composer.unsaid_facts(self._turn(state), draft))
            except ModelError as error:
                if error.call:
                    trace.model_calls.append(error.call)
                trace.errors.append(str(error))
                over = self.deadline(trace).expired
                trace.notices.append(reply("over_budget" if over else "model_unavailable"))
                draft, trace.generator = self.extractive_answer(state), "extractive"
        draft = trace.draft = joined(self._lead(state), draft)
        trace.citations = list(dict.fromkeys(citations_in(draft)))
        trace.invalid_citations = [c for c in trace.citations if c not in state["prompt_source_ids"]]
        return {"draft": draft, "trace": trace}

    def crisis_reminder(self, state: ChatState) -> str:
        """Soon after a crisis message, every answer ends with the crisis contacts again (fixed
        text, added after the filter): the person asked something else, but may not be safe."""
        crises = recent_crises(state, self.services, before=state["turn"])
        if not crises:
            return ""
        kind = crises[-1].kind
        # After a health problem on a medicine: it still needs a doctor now ("can I wait till
        # Monday?"), which "if you are not safe" does not say.
        name = "crisis_medical_reminder" if kind == "medical_emergency" else "crisis_reminder"
        return reply(name, contacts=contact_lines(self.settings.crisis_contacts))

    def extractive_answer(self, state: ChatState) -> str:
        return self.composer.extractive_answer(self._turn(state))

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
                return {"answer": joined(self._lead(state), self.extractive_answer(state), closing),
                        "trace": trace}
            return {"answer": joined(state["draft"], closing), "trace": trace}

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
            return joined(self._lead(state), self.composer.card_reply(self._turn(state), card) if card
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
            titles = [d.title for sid in state.get("prompt_source_ids") or [] if (d := self.services.source_text(sid))]
            answer, trace.generator = withheld(titles, self.services.topic_titles()), "fixed"
        late = reply("over_budget")
        if report.fallback_used and outcome.text is not None and deadline.expired and late not in trace.notices:
            trace.notices.append(late)
        return {"answer": joined(answer, closing), "trace": trace,
                "warnings": [*(state.get("warnings") or []), *outcome.warnings]}

    # -- side exits --------------------------------------------------------------------------
    @timed("crisis_response")
    def crisis_response(self, state: ChatState, _context: TurnContext) -> dict:
        trace = state["trace"].model_copy(update={"generator": "fixed", "route": "crisis"})
        screen = state["screen"]
        situation = ("medical" if screen.crisis_kind == "medical_emergency"
                     else "overdose" if screen.crisis_kind == "overdose_taken"
                     else "someone_else" if screen.crisis_kind in SOMEONE_ELSE_IN_DANGER
                     else "harm" if screen.crisis_kind == "harm_to_others" else "")
        continued = screen.crisis_layer == "conversation" or screen.crisis_goes_on
        return {"answer": crisis_reply(self.settings.crisis_contacts, continued=continued, situation=situation,
                                       language=screen.language, profile=self.services.profile,
                                       warning_signs=self.services.medicines.warning_signs(screen.text)),
                "trace": trace}

    @timed("small_talk")
    def small_talk(self, state: ChatState, _context: TurnContext) -> dict:
        trace = state["trace"].model_copy(update={"generator": "fixed", "route": "small_talk"})
        asked_before, questions = asked(state), list(headline_questions(self.services.identifier.knowledge_base).values())
        screen = state["screen"]
        if reminder := self.crisis_reminder(state):
            # "ok" soon after someone said they or another were in danger: not example questions.
            return {"answer": reminder, "trace": trace}
        models_used = any(self.settings.models.for_role(role).enabled for role in ROLES)
        # Its kind read by its words as the screen read them ("thnks" is "thanks").
        read = self.services.identifier.correct_english(screen.text)
        answer = small_talk_reply(read, questions, asked_before, seed=state["turn"], learned=screen.small_talk_kind,
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
            return {"answer": joined(reply("clarify", options=lines), reminder), "clarify_candidates": options,
                    "trace": trace}
        return {"answer": joined(self._not_covered(state), reminder), "clarify_candidates": [], "trace": trace}

    def _not_covered(self, state: ChatState) -> str:
        identifier, screen = self.services.identifier, state["screen"]
        last = self.sources.last_answer_sources(state) if state["identification"].context else []
        return not_covered(screen.text, urgent=screen.urgent, asks=answer_types.asks_anything(screen.text),
                           topic_titles=[c.title for c in last], asked=asked(state),
                           answers_before=said(state, AIMessage), score=identifier.score,
                           headlines=headline_questions(identifier.knowledge_base),
                           all_titles=self.services.topic_titles(), profile=self.services.profile)

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
