"""The answer graph's nodes. Each takes the state and returns only what it changes.

screen_input → identify_sources → enhance_prompt → generate → critical_analysis → respond,
with side exits: crisis messages go to `crisis_response`, unclear or unknown questions to `clarify`.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from app.errors import ModelError
from app.generation.extractive import compose_extractive_answer
from app.graph.services import Services
from app.graph.state import ChatState, InputScreen, NodeRun, TurnTrace
from app.input import clean_message
from app.models import call_text
from app.prompts import chat_system_prompt, crisis_reply, reply, topics_list
from app.retrieval import Candidate, Identification
from judges.crisis_screen import needs_second_look, second_look
from judges.local.crisis import detect_crisis
from judges.local.text import citations_in

Node = Callable[[ChatState], dict]
_CHOICE = re.compile(r"^\s*(?:option\s*|number\s*|#)?([1-9])\b", re.IGNORECASE)
_YES = re.compile(r"^\s*(yes|yeah|yep|yup|y|ok|okay|sure|that one|the first( one)?)\b", re.IGNORECASE)


def timed(name: str) -> Callable[[Callable[..., dict]], Callable[..., dict]]:
    """Record the node's latency in the turn trace."""

    def decorate(node: Callable[..., dict]) -> Callable[..., dict]:
        @functools.wraps(node)
        def run(self: AnswerNodes, state: ChatState) -> dict:
            started = time.perf_counter()
            update = node(self, state)
            trace: TurnTrace = update.get("trace") or state["trace"]
            ms = (time.perf_counter() - started) * 1000
            update["trace"] = trace.model_copy(update={"nodes": [*trace.nodes, NodeRun(node=name, latency_ms=ms)]})
            return update

        return run

    return decorate


class AnswerNodes:
    def __init__(self, services: Services):
        self.services = services

    @property
    def settings(self):
        return self.services.settings

    # -- screening ---------------------------------------------------------------------------
    @timed("screen_input")
    def screen_input(self, state: ChatState) -> dict:
        turn = state.get("turn", 0) + 1
        cleaned = clean_message(state.get("user_input", ""), self.settings.input)
        trace = TurnTrace(turn=turn, user_message=cleaned.text, notices=list(cleaned.notices),
                          caf_enabled=self.services.caf is not None)
        screen = InputScreen(text=cleaned.text, notices=list(cleaned.notices))
        if cleaned.empty or cleaned.refused:
            screen.route = "notice"
            screen.reply = reply("empty_message") if cleaned.empty else " ".join(cleaned.notices)
            screen.notices = []
        else:
            crisis = detect_crisis(cleaned.text)
            screen.crisis_score, screen.crisis_evidence = crisis.score, crisis.sentences
            screener, mode = self.services.crisis_screener, self.settings.caf.llm_crisis_screen
            if screener is not None and needs_second_look(crisis, mode):
                is_crisis, reason, call = second_look(screener, cleaned.text)
                if call is not None:
                    trace.model_calls.append(call)
                if is_crisis:
                    screen.crisis_evidence = [reason or "the crisis screener's judgement"]
                elif call is None or not call.ok:
                    trace.errors.append(reason)
                crisis = crisis.model_copy(update={"flagged": crisis.flagged or is_crisis})
            if crisis.flagged:
                screen.route = "crisis"
            elif not cleaned.likely_english:
                screen.route = "notice"
                screen.reply = reply("not_english", topics=topics_list(self.services.topic_titles()))
        trace.route = "answer" if screen.route == "answer" else screen.route
        return {"turn": turn, "screen": screen, "trace": trace, "identification": None,
                "draft": "", "answer": ""}

    # -- sources -----------------------------------------------------------------------------
    @timed("identify_sources")
    def identify_sources(self, state: ChatState) -> dict:
        text = state["screen"].text
        chosen = _resolve_clarification(text, state.get("clarify_candidates") or [])
        if chosen is not None:
            previous = _last_user_message(state)
            identification = Identification(outcome="clear", candidates=[chosen],
                                            parts=[previous or text], latency_ms=0.0)
        else:
            recent = [m.content for m in state.get("messages", []) if isinstance(m, HumanMessage)][-2:]
            identification = self.services.identifier.identify(text, recent=recent)
        trace = state["trace"].model_copy(update={"identification": identification})
        if identification.outcome != "clear":
            trace.route = "clarify" if identification.outcome == "middling" else "no_match"
        return {"identification": identification, "trace": trace}

    @timed("enhance_prompt")
    def enhance_prompt(self, state: ChatState) -> dict:
        """Chosen sources first, then sources still in play from recent turns, under a budget;
        pending judge warnings; the recent conversation."""
        turn, prompting = state["turn"], self.settings.prompting
        chosen = [c.source_id for c in state["identification"].candidates]
        recent = [sid for sid, last in sorted((state.get("sources_in_play") or {}).items(),
                                              key=lambda item: -item[1])
                  if last >= turn - prompting.keep_sources_for_turns and sid not in chosen]
        included, dropped, budget = [], [], prompting.source_token_budget
        for sid in [*chosen, *recent]:
            doc = self.services.source_text(sid)
            cost = _tokens(doc.text) if doc else 0
            if doc and (cost <= budget or not included):  # the best source always goes in
                included.append(doc)
                budget -= cost
            else:
                dropped.append(sid)
        warnings = [w for w in state.get("warnings") or [] if w.active_at(turn)]
        system = chat_system_prompt([(d.id, d.title, d.text) for d in included],
                                    [(w.rule, w.message) for w in warnings])
        history = state.get("messages", [])[-2 * prompting.history_turns:] if prompting.history_turns else []
        prompt = [SystemMessage(system), *history, HumanMessage(state["screen"].text)]
        trace = state["trace"].model_copy(update={
            "prompt_sources": [d.id for d in included], "dropped_sources": dropped,
            "warnings_in_prompt": [w.message for w in warnings]})
        return {"prompt": prompt, "prompt_source_ids": [d.id for d in included], "trace": trace}

    # -- generation --------------------------------------------------------------------------
    @timed("generate")
    def generate(self, state: ChatState) -> dict:
        trace = state["trace"].model_copy(deep=True)
        if self.services.chat is None:
            draft, trace.generator = self.extractive_answer(state), "extractive"
        else:
            try:
                draft, call = call_text(self.services.chat, state["prompt"], purpose="draft")
                trace.model_calls.append(call)
                trace.generator = "llm"
            except ModelError as error:
                if error.call:
                    trace.model_calls.append(error.call)
                trace.errors.append(str(error))
                trace.notices.append(reply("model_unavailable"))
                draft, trace.generator = self.extractive_answer(state), "extractive"
        trace.draft = draft
        trace.citations = _unique(citations_in(draft))
        trace.invalid_citations = [c for c in trace.citations if c not in state["prompt_source_ids"]]
        return {"draft": draft, "trace": trace}

    def extractive_answer(self, state: ChatState) -> str:
        identification = state["identification"]
        parts = identification.parts or [state["screen"].text]
        # The best source for each part of the question (candidates come best first).
        chosen: list[str] = []
        for part in parts:
            best = next((c.source_id for c in identification.candidates if c.part in (part, None)), None)
            if best and best not in chosen:
                chosen.append(best)
        usable = [sid for sid in chosen if sid in state["prompt_source_ids"]] or state["prompt_source_ids"][:1]
        docs = [d for sid in usable if (d := self.services.source_text(sid))]
        return compose_extractive_answer(parts, docs, self.services.embed)

    @timed("critical_analysis")
    def critical_analysis(self, state: ChatState) -> dict:
        """Fail closed: with no filter configured, only a draft with valid citations goes out."""
        trace = state["trace"].model_copy(deep=True)
        caf = self.services.caf
        if caf is not None:
            return caf.review(state, self, trace)
        if trace.invalid_citations:
            trace.fallback_used = True
            trace.errors.append(f"draft cited sources it was not given: {trace.invalid_citations}")
            return {"answer": self.extractive_answer(state), "trace": trace}
        return {"answer": state["draft"], "trace": trace}

    # -- side exits --------------------------------------------------------------------------
    @timed("crisis_response")
    def crisis_response(self, state: ChatState) -> dict:
        trace = state["trace"].model_copy(update={"generator": "fixed", "route": "crisis"})
        return {"answer": crisis_reply(self.settings.crisis_contacts), "trace": trace}

    @timed("clarify")
    def clarify(self, state: ChatState) -> dict:
        identification = state["identification"]
        trace = state["trace"].model_copy(update={"generator": "fixed"})
        if identification.outcome == "middling" and identification.candidates:
            options = identification.candidates[: self.settings.retrieval.top_k]
            lines = "\n".join(f"{n}. {c.title}" for n, c in enumerate(options, 1))
            return {"answer": reply("clarify", options=lines), "clarify_candidates": options,
                    "trace": trace}
        topics = topics_list(self.services.topic_titles())
        return {"answer": reply("no_match", topics=topics), "clarify_candidates": [], "trace": trace}

    # -- delivery ----------------------------------------------------------------------------
    @timed("respond")
    def respond(self, state: ChatState) -> dict:
        screen, trace, turn = state["screen"], state["trace"].model_copy(deep=True), state["turn"]
        answer = screen.reply if screen.route == "notice" else state["answer"]
        if trace.notices and screen.route != "notice":
            answer = "\n\n".join([*trace.notices, answer])
        trace.answer = answer
        update: dict = {"answer": answer, "trace": trace,
                        "warnings": [w for w in state.get("warnings") or [] if w.expires_after_turn > turn]}
        if trace.route != "clarify":
            update["clarify_candidates"] = []
        if screen.text:  # an empty message leaves the conversation as it was
            update["messages"] = [HumanMessage(screen.text), AIMessage(answer)]
        in_play = dict(state.get("sources_in_play") or {})
        for sid in citations_in(answer):
            if sid in (state.get("prompt_source_ids") or []):
                in_play[sid] = turn
        update["sources_in_play"] = in_play
        return update


def _tokens(text: str) -> int:
    return int(len(text.split()) * 1.35)  # close enough to BPE counts for English prose


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _last_user_message(state: ChatState) -> str | None:
    humans = [m.content for m in state.get("messages", []) if isinstance(m, HumanMessage)]
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
