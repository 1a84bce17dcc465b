"""The chat page: the patient's conversation, rebuilt from the turn log on every run (so a reload or
a restart shows exactly what was said), with cited sources to open, "did you mean" buttons,
follow-up suggestions, feedback, and the staff trace when signed in.

An answer appears only once the whole turn has finished, filter included: the status names the
steps while it runs, and nothing is streamed before the filter has passed it.
"""

from __future__ import annotations

import streamlit as st

from app.core.errors import CafbotError
from app.core.records import TurnTrace
from app.prompts import contact_lines
from app.session import THREAD_ID, Chatbot
from app.store import Feedback
from app.ui import staff
from app.ui.runtime import chatbot
from app.ui.suggestions import suggestions_per_turn
from app.ui.trace import show_trace

RATED_ROUTES = ("answer", "boundary", "clarify", "no_match")  # not greetings, not crises
PENDING = "pending_question"  # a question chosen by a button, asked on the next run
STEPS = {  # a step that has just finished -> what the person is told while the next one runs
    "screen_input": "Reading your message…",
    "identify_sources": "Finding sources…",
    "enhance_prompt": "Writing the answer…",
    "generate": "Checking the answer…",
    "critical_analysis": "Almost done…",
}
FIRST_VISIT = (
    "**Hello.** I share general information about {topic} for {audience}, "
    "from a checked set of sources, and I show you where each answer comes from.\n\n"
    "I am not a doctor: I can't diagnose, advise on your own treatment or doses, or offer therapy. "
    "Your care team can. I can't help in an emergency: if you or someone else is in danger, use "
    "**Need help now?** in the menu."
)


def render() -> None:
    bot = chatbot()
    thread = _current_thread(bot)
    _sidebar(bot, thread)
    turns = bot.conversations.turns(thread) if thread else []
    profile = bot.services.profile
    st.title(profile.title)
    if not turns:
        st.info(FIRST_VISIT.format(**profile.wording()), icon=":material/info:")
        _starters(bot)
    feedback = bot.turn_log.feedback(thread) if thread else {}
    plan = suggestions_per_turn(turns, lambda sid: _questions(bot, sid))
    for trace, suggestions in zip(turns, plan, strict=True):
        last = trace is turns[-1]
        _show_turn(bot, trace, suggestions if last else [], last, feedback.get(trace.turn))
    typed = st.chat_input(profile.input_hint, max_chars=bot.settings.input.max_chars)
    question = typed or st.session_state.pop(PENDING, None)
    if question:
        _ask(bot, thread, question)


# -- the conversation in the URL ------------------------------------------------------------------
def _current_thread(bot: Chatbot) -> str | None:
    """The conversation named in the URL (`?thread=…`), so a reload or a bookmark comes back to it."""
    thread = st.query_params.get("thread")
    if thread is None:
        return None
    if THREAD_ID.fullmatch(thread) and bot.conversations.exists(thread):
        return thread
    del st.query_params["thread"]
    st.warning("That conversation is no longer here (it may have been deleted). Ask a question to "
               "start a new one.")
    return None


def _ask(bot: Chatbot, thread: str | None, question: str) -> None:
    with st.chat_message("user"):
        st.text(question)  # their own words: no markdown, no HTML
    with st.chat_message("assistant"), st.status("Reading your message…") as status:
        try:
            if thread is None:
                thread = bot.new_thread(label="app")
                st.query_params["thread"] = thread
            bot.ask(thread, question,
                    on_step=lambda step: step in STEPS and status.update(label=STEPS[step]))
        except CafbotError as error:  # busy, or failed: the conversation is as it was
            status.update(label="Not answered", state="error")
            st.error(str(error))
            st.session_state["retry"] = question
            return
        status.update(label="Checked", state="complete")
    st.rerun()


# -- one turn -------------------------------------------------------------------------------------
def _show_turn(bot: Chatbot, trace: TurnTrace, suggestions: list[str], last: bool,
               feedback: Feedback | None) -> None:
    with st.chat_message("user"):
        st.text(trace.user_message)
    with st.chat_message("assistant"):
        if trace.route == "crisis":
            with st.container(border=True, key=f"crisis-{trace.turn}"):
                st.markdown("#### Please reach out to someone now")
                st.markdown(trace.answer)
        else:
            st.markdown(trace.answer)
        _sources(bot, trace)
        if last and trace.route == "clarify" and trace.identification:
            _clarify_buttons(bot, trace)
        if suggestions:
            st.caption("You could also ask:")
            for n, question in enumerate(suggestions):
                st.button(question, key=f"suggest-{trace.turn}-{n}", on_click=_queue, args=(question,))
        if trace.route in RATED_ROUTES:
            _feedback(bot, trace, feedback)
        if staff.show_traces():
            show_trace(trace)


def _sources(bot: Chatbot, trace: TurnTrace) -> None:
    for sid in dict.fromkeys(trace.citations):
        source = bot.services.source_text(sid)
        if source is None:
            continue
        with st.expander(f"Source {sid}: {source.title}", icon=":material/description:"):
            st.markdown(source.text)


def _clarify_buttons(bot: Chatbot, trace: TurnTrace) -> None:
    options = trace.identification.candidates[: bot.settings.retrieval.top_k]
    for n, candidate in enumerate(options, 1):
        st.button(candidate.title, key=f"clarify-{trace.turn}-{n}", on_click=_queue, args=(candidate.title,))


def _feedback(bot: Chatbot, trace: TurnTrace, given: Feedback | None) -> None:
    key = f"feedback-{trace.thread_id}-{trace.turn}"
    default = None if given is None else int(given.helpful)
    st.feedback("thumbs", key=key, default=default, on_change=_save_rating, args=(bot, trace, key))
    if given is not None and not given.comment:
        with st.form(f"comment-{trace.turn}", clear_on_submit=True, border=False):
            comment = st.text_input("Anything to add? (optional)", max_chars=1000, key=f"comment-text-{trace.turn}")
            if st.form_submit_button("Send") and comment.strip():
                bot.turn_log.save_feedback(trace.thread_id, trace.turn,
                                           given.model_copy(update={"comment": comment}))
                st.toast("Thank you for your feedback.")
                st.rerun()
    elif given is not None:
        st.caption("Thank you for your feedback.")


def _save_rating(bot: Chatbot, trace: TurnTrace, key: str) -> None:
    value = st.session_state.get(key)
    if value is not None:
        bot.turn_log.save_feedback(trace.thread_id, trace.turn, Feedback(helpful=bool(value)))


# -- around the conversation ----------------------------------------------------------------------
def _starters(bot: Chatbot) -> None:
    """Three first questions, from the sources people open first."""
    firsts = [source.questions[0] for source in list(bot.services.identifier.knowledge_base)[:3]
              if source.questions]
    st.caption("You could start with:")
    for n, question in enumerate(firsts):
        st.button(question, key=f"starter-{n}", on_click=_queue, args=(question,))


def _sidebar(bot: Chatbot, thread: str | None) -> None:
    with st.sidebar:
        with st.expander("Need help now?", icon=":material/emergency:"):
            st.markdown("If you or someone else is in danger or needs urgent help:\n\n"
                        + contact_lines(bot.settings.crisis_contacts))
        if st.session_state.get("retry"):
            st.button("Try the last question again", on_click=_queue, args=(st.session_state.pop("retry"),))
        if thread:
            if st.button("New conversation", icon=":material/add:"):
                del st.query_params["thread"]
                st.rerun()
            _delete(bot, thread)
        st.caption("General information only, not a substitute for your care team.")
        staff.sidebar(bot.settings)


def _delete(bot: Chatbot, thread: str) -> None:
    if not st.session_state.get("confirm_delete"):
        st.button("Delete this conversation", icon=":material/delete:",
                  on_click=lambda: st.session_state.update(confirm_delete=True))
        return
    st.warning("Delete this conversation everywhere? This cannot be undone.")
    yes, no = st.columns(2)
    if yes.button("Yes, delete it", type="primary"):
        bot.delete(thread)
        st.session_state["confirm_delete"] = False
        del st.query_params["thread"]
        st.toast("The conversation was deleted.")
        st.rerun()
    if no.button("Keep it"):
        st.session_state["confirm_delete"] = False
        st.rerun()


def _queue(question: str) -> None:
    st.session_state[PENDING] = question


def _questions(bot: Chatbot, source_id: str) -> list[str]:
    source = bot.services.identifier.knowledge_base.get(source_id)
    return list(source.questions) if source else []
