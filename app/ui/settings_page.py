"""Staff settings: the effective configuration (secrets masked) and whether each model role's
endpoint answers."""

from __future__ import annotations

import streamlit as st

from app.core.config import ROLES, Provider
from app.core.models.health import endpoint_health
from app.ui import staff
from app.ui.runtime import chatbot


def render() -> None:
    if not staff.signed_in():  # the page is only listed for staff; a typed URL is refused too
        st.error("This page is for staff only.")
        return
    settings = chatbot().settings
    st.title("Settings")
    st.subheader("Models")
    rows = []
    for role in ROLES:
        model = settings.models.for_role(role)
        if model.provider is Provider.NONE:
            rows.append({"role": role, "model": "–", "endpoint": "–", "status": "not used (offline)"})
            continue
        key = model.api_key()
        health = endpoint_health(model.base_url or "", key.get_secret_value() if key else None)
        rows.append({"role": role, "model": model.model, "endpoint": model.base_url or "",
                     "status": "reachable" if health.ok else f"not reachable: {health.detail}"})
    st.table(rows)
    st.subheader("Effective configuration")
    st.caption("From environment variables, .env and cafbot.toml; secrets are masked.")
    st.json(settings.masked())
