"""The app's entry script (`cafbot ui` runs it with `streamlit run`): the chat for everyone; the
scoring workspace, its results and the settings page for signed-in staff."""

from __future__ import annotations

import streamlit as st

from app.core.config import Settings
from app.core.profile import load_profile
from app.ui import chat, results_page, score_page, settings_page, staff

_profile = load_profile(Settings().knowledge_base)  # the page's title, before the chatbot loads
st.set_page_config(page_title=f"{_profile.service}: {_profile.title}", page_icon=":material/chat:",
                   layout="centered", initial_sidebar_state="auto")

pages = [st.Page(chat.render, title="Chat", icon=":material/chat:", url_path="chat", default=True)]
if staff.signed_in():
    pages.append(st.Page(score_page.render, title="Score", icon=":material/rate_review:", url_path="score"))
    pages.append(st.Page(results_page.render, title="Results", icon=":material/analytics:", url_path="results"))
    pages.append(st.Page(settings_page.render, title="Settings", icon=":material/settings:",
                         url_path="settings"))
st.navigation(pages).run()
