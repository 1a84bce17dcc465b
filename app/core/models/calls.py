"""Calling a role's chat model and recording what each call cost.

Every call returns its result with a `ModelCall` record (role, model, tokens, latency, error) so the
turn trace can show what was spent. Failures of any kind become `ModelError`; callers decide what a
failure means (the CAF, for one, treats it as a flag and fails closed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel

from app.core.errors import ModelError
from app.core.records import ModelCall

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class RoleClient:
    """A chat model bound to the role it plays. Shared across conversations, so it keeps no
    per-call state: each call's record is returned to the caller, who puts it in the turn trace."""

    role: str
    model_name: str
    llm: BaseChatModel


def _usage(message: BaseMessage | None) -> tuple[int, int]:
    usage = getattr(message, "usage_metadata", None) or {}
    return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}"[:300] if text else type(error).__name__


def call_text(client: RoleClient, messages: list[BaseMessage], purpose: str = "") -> tuple[str, ModelCall]:
    """Free-text completion. Raises ModelError on failure or an empty answer."""
    started = time.perf_counter()
    try:
        message = client.llm.invoke(messages)
    except Exception as error:  # any transport, timeout or server error
        raise _error(_failed(client, purpose, started, _describe(error))) from error
    text = message.content if isinstance(message.content, str) else _join_parts(message.content)
    tokens_in, tokens_out = _usage(message)
    call = ModelCall(role=client.role, model=client.model_name, purpose=purpose,
                     input_tokens=tokens_in, output_tokens=tokens_out,
                     latency_ms=(time.perf_counter() - started) * 1000)
    if not text.strip():
        call.ok, call.error = False, "the model returned an empty answer"
        raise _error(call)
    return text.strip(), call


def call_structured(
    client: RoleClient, schema: type[T], messages: list[BaseMessage], purpose: str = ""
) -> tuple[T, ModelCall]:
    """A pydantic-typed answer through function calling, which both OpenAI and llama.cpp accept
    (llama.cpp's server rejects `response_format` of type `json_schema`). Malformed output raises."""
    started = time.perf_counter()
    try:
        runnable = client.llm.with_structured_output(schema, method="function_calling", include_raw=True)
        result = runnable.invoke(messages)
    except Exception as error:
        raise _error(_failed(client, purpose, started, _describe(error))) from error
    raw: AIMessage | None = result.get("raw")
    tokens_in, tokens_out = _usage(raw)
    call = ModelCall(role=client.role, model=client.model_name, purpose=purpose,
                     input_tokens=tokens_in, output_tokens=tokens_out,
                     latency_ms=(time.perf_counter() - started) * 1000)
    parsed = result.get("parsed")
    if not isinstance(parsed, schema):
        problem = result.get("parsing_error") or "no structured answer"
        detail = _describe(problem) if isinstance(problem, BaseException) else str(problem)
        call.ok, call.error = False, f"malformed output: {detail}"
        raise _error(call)
    return parsed, call


def _failed(client: RoleClient, purpose: str, started: float, error: str) -> ModelCall:
    return ModelCall(role=client.role, model=client.model_name, purpose=purpose, ok=False,
                     error=error, latency_ms=(time.perf_counter() - started) * 1000)


def _error(call: ModelCall) -> ModelError:
    error = ModelError(call.role, call.model, call.error or "unknown error")
    error.call = call  # so the caller can still put the failed call in the trace
    return error


def _join_parts(parts: list) -> str:
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in parts)
