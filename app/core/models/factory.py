"""Build the chat model for a role from configuration. Nothing here runs at import time."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from app.core.config import Provider, Role, Settings
from app.core.errors import ConfigError
from app.core.models.calls import RoleClient


def model_for(role: Role, settings: Settings) -> RoleClient | None:
    """The role's client, or None when the role has no model (the offline components take over)."""
    spec = settings.models.for_role(role)
    if not spec.enabled:
        return None
    if not spec.model:
        raise ConfigError(f"models.{role}.model is empty: name the model to use for the {role} role.")
    return RoleClient(role=role, model_name=spec.model, llm=_chat_openai(role, settings),
                      timeout_s=spec.timeout_s, retries=spec.retries)


def helper_model(settings: Settings) -> RoleClient | None:
    """The model for small helper calls (choosing sources, drafting summaries, rewriting a
    follow-up): the cheap screener if configured, else the chat model, else None."""
    return model_for("screener", settings) or model_for("chat", settings)


def _chat_openai(role: Role, settings: Settings) -> BaseChatModel:
    from langchain_openai import ChatOpenAI  # imported on demand: offline runs never need it

    spec = settings.models.for_role(role)
    key = spec.api_key()
    if key is None and spec.provider is Provider.OPENAI and not spec.base_url:
        raise ConfigError(
            f"The {role} role uses OpenAI but {spec.api_key_env} is not set. "
            f"Export {spec.api_key_env}, or set models.{role}.base_url to another endpoint."
        )
    kwargs = {}
    if spec.provider is Provider.LOCAL or spec.base_url:
        # ChatOpenAI sends the limit as `max_completion_tokens`, which llama.cpp and some other
        # compatible servers ignore; without `max_tokens` they generate until the context is full.
        kwargs["extra_body"] = {"max_tokens": spec.max_tokens}
    return ChatOpenAI(
        model=spec.model,
        base_url=spec.base_url,
        api_key=key or "not-needed",
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        timeout=spec.timeout_s,
        max_retries=0,  # ours (app.core.models.calls), so one turn's time budget bounds them all
        **kwargs,
    )
