"""What the app holds once per server process: the chatbot (warmed before the first question)
and the staff sign-in limiter. Every browser session shares them."""

from __future__ import annotations

import atexit
from contextlib import ExitStack

import streamlit as st

from app.core.config import Settings
from app.core.models.local_server import serve_if_needed
from app.session import Chatbot
from app.store import ScoreStore
from app.store.attempts import AttemptLimiter


@st.cache_resource(show_spinner="Getting ready: loading the knowledge base and the checks…")
def chatbot() -> Chatbot:
    stack = ExitStack()
    settings = Settings()
    stack.enter_context(serve_if_needed(settings))  # the local profile's model server, if needed
    bot = stack.enter_context(Chatbot(settings))
    bot.services.warm_up()
    atexit.register(stack.close)
    return bot


@st.cache_resource
def score_store() -> ScoreStore:
    """The scoring tables, in the chatbot's own store (one engine per process)."""
    return ScoreStore(chatbot().store)


@st.cache_resource
def staff_limiter(attempts: int, window_s: float) -> AttemptLimiter:
    """Counted in the chatbot's store, which every replica shares."""
    return AttemptLimiter(chatbot().store, attempts, window_s)
