"""The Score page (staff): one answer at a time, blind, with its conversation and cited sources on
the left and the rubric on the right. Each criterion ticked is a point; "Save and next" (Ctrl+Enter)
keeps the score at once and moves on; coming back resumes at the first item not yet scored."""

from __future__ import annotations

import streamlit as st

from app.core.rubric import Rubric, load_rubric
from app.store import Item, Score, ScoreStore
from app.ui import staff
from app.ui.runtime import score_store


def render() -> None:
    if not staff.signed_in():  # listed for staff only; a typed URL is refused too
        st.error("This page is for staff only.")
        return
    st.set_page_config(layout="wide")  # the item and the rubric side by side
    st.title("Score answers")
    store, rubric = score_store(), load_rubric()
    rater = _rater(store)
    if rater is None:
        return
    queue = store.queue(rater)
    if not queue:
        st.info(f"Nothing is assigned to {rater} yet.")
        return
    done = sum(score is not None for _item, score in queue)
    st.progress(done / len(queue), text=f"{done} of {len(queue)} scored")
    position_key = f"score-position:{rater}"
    if position_key not in st.session_state:  # resume at the first item not yet scored
        st.session_state[position_key] = next((n for n, (_i, s) in enumerate(queue) if s is None), 0)
    position = min(st.session_state[position_key], len(queue) - 1)
    if done == len(queue):
        st.success("Every assigned answer is scored. Thank you! You can still go back and change any.")
    item, score = queue[position]
    left, right = st.columns([1, 1], gap="large")
    with left:
        _item(item, position, len(queue))
    with right:
        _rubric_form(store, rubric, rater, item, score, queue, position, position_key)


def _rater(store: ScoreStore) -> str | None:
    raters = store.raters()
    if not raters:
        st.info("No raters yet. Add a run and assign raters first:\n\n"
                "`cafbot score add-run RUN` then `cafbot score assign RUN --raters ann,bob`")
        return None
    chosen = st.query_params.get("rater")
    rater = st.selectbox("Scoring as", raters, index=raters.index(chosen) if chosen in raters else None,
                         placeholder="Choose your name")
    if rater is None:
        return None
    if st.query_params.get("rater") != rater:
        st.query_params["rater"] = rater  # a reload comes back to the same rater
    return rater


def _item(item: Item, position: int, total: int) -> None:
    st.caption(f"Answer {position + 1} of {total} · {item.item_id}")
    if item.context:
        with st.expander(f"Conversation so far ({len(item.context)} earlier turns)"):
            for exchange in item.context:
                st.markdown(f"**User:** {exchange.user}")
                st.markdown(f"**Bot:** {exchange.assistant}")
    with st.chat_message("user"):
        st.text(item.question)
    with st.chat_message("assistant"):
        st.markdown(item.answer)
    if item.sources:
        st.markdown("**Cited sources**")
        for source in item.sources:
            with st.expander(f"[{source.id}] {source.title}"):
                st.markdown(source.text or "_The source is no longer in the knowledge base._")
    else:
        st.caption("The answer cites no source.")


def _rubric_form(store: ScoreStore, rubric: Rubric, rater: str, item: Item, score: Score | None,
                 queue: list, position: int, position_key: str) -> None:
    st.subheader("Rubric")
    with st.expander("How to score"):
        st.markdown(rubric.instructions)
    ticks = {}
    for criterion in rubric.criteria:
        ticks[criterion.id] = st.checkbox(
            criterion.title, value=bool(score and score.criteria.get(criterion.id)),
            key=f"{rater}:{item.item_id}:{criterion.id}", help=" ".join(criterion.guidance.split()))
    with st.expander("Worked examples"):
        for criterion in rubric.criteria:
            st.markdown(f"**{criterion.title}**")
            for example in criterion.examples:
                st.markdown(f"- {'Meets' if example.meets else 'Does not meet'}: *{example.question}* "
                            f"— {' '.join(example.why.split())}")
    total = sum(ticks.values())
    st.metric("Score", f"{total} / {rubric.max_score}", help=rubric.levels[total])
    st.caption(rubric.levels[total])
    comment = st.text_area("Comment (optional)", value=score.comment if score else "",
                           key=f"{rater}:{item.item_id}:comment",
                           placeholder="Unsure? Name the criterion and what made you unsure.")
    if st.button("Save and next", type="primary", shortcut="Ctrl+Enter", width="stretch"):
        store.save_score(Score(rater=rater, item_id=item.item_id, score=total, criteria=ticks,
                               comment=comment.strip(), via="app"))
        st.toast(f"Saved: {total} / {rubric.max_score}")
        unscored = [n for n, (i, s) in enumerate(queue) if s is None and i.item_id != item.item_id]
        later = [n for n in unscored if n > position]
        st.session_state[position_key] = (later or unscored or [min(position + 1, len(queue) - 1)])[0]
        st.rerun()
    back, skip = st.columns(2)
    if back.button("Back", disabled=position == 0, width="stretch"):
        st.session_state[position_key] = position - 1
        st.rerun()
    if skip.button("Skip", disabled=position == len(queue) - 1, width="stretch"):
        st.session_state[position_key] = position + 1
        st.rerun()
    if score:
        st.caption(f"Your saved score: {score.score} (changed {score.revisions} time(s)).")
