"""Staff sign-in, in the sidebar: only when a staff code hash is configured. Signed-in staff may
turn on the trace under each answer and open the settings page; patients see neither."""

from __future__ import annotations

import streamlit as st

from app.core.access import verify_code
from app.core.config import Settings
from app.ui.runtime import staff_limiter

SIGNED_IN = "staff_signed_in"
SHOW_TRACES = "staff_show_traces"


def signed_in() -> bool:
    return bool(st.session_state.get(SIGNED_IN))


def show_traces() -> bool:
    return signed_in() and bool(st.session_state.get(SHOW_TRACES))


def sidebar(settings: Settings) -> None:
    stored = settings.ui.staff_code_hash
    if not stored:
        return
    if signed_in():
        st.toggle("Show the trace under each answer", key=SHOW_TRACES)
        if st.button("Sign out of the staff view"):
            st.session_state[SIGNED_IN] = False
            st.session_state[SHOW_TRACES] = False
            st.rerun()
        return
    with st.expander("Staff sign-in"):
        with st.form("staff-sign-in", clear_on_submit=True, border=False):
            code = st.text_input("Staff access code", type="password")
            submitted = st.form_submit_button("Sign in")
        if submitted:
            _sign_in(code, stored, settings)


def _sign_in(code: str, stored: str, settings: Settings) -> None:
    limiter = staff_limiter(settings.ui.staff_attempts, settings.ui.staff_lockout_s)
    if (wait := limiter.wait_s()) > 0:
        st.error(f"Too many wrong codes; try again in {wait:.0f} seconds.")
        return
    if verify_code(code, stored):
        st.session_state[SIGNED_IN] = True
        st.rerun()
    limiter.failed()
    st.error("That code is not right.")
