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
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ValidationError

from app.core.errors import ModelError
from app.core.records import ModelCall

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class RoleClient:
    """A chat model bound to the role it plays. Shared across conversations, so it keeps no
    per-call state: each call's record is returned to the caller, who puts it in the turn trace.
    `timeout_s` bounds one attempt and `retries` the attempts after it; a `Deadline` bounds them
    all together."""

    role: str
    model_name: str
    llm: BaseChatModel
    timeout_s: float = 60.0
    retries: int = 0


@dataclass(frozen=True)
class Deadline:
    """One wall-clock budget shared by every model call of a turn, retries included: an endpoint
    that accepts but never answers costs the user this long, not timeout x attempts x calls."""

    at: float  # time.time() when the budget runs out

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.time() + seconds)

    def remaining(self) -> float:
        return max(0.0, self.at - time.time())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0


BUDGET_SPENT = "the turn's time budget was spent before this call could finish"


def _usage(message: BaseMessage | None) -> tuple[int, int]:
    usage = getattr(message, "usage_metadata", None) or {}
    return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}"[:300] if text else type(error).__name__


def _transient(error: BaseException) -> bool:
    """Worth another attempt: timeouts, dropped connections, rate limits and server errors."""
    if isinstance(error, TimeoutError | ConnectionError):
        return True
    try:
        import openai
    except ImportError:
        return False
    return isinstance(error, openai.APITimeoutError | openai.APIConnectionError | openai.RateLimitError
                      | openai.InternalServerError)


def _invoke(client: RoleClient, runnable: Runnable, messages: list[BaseMessage], purpose: str,
            deadline: Deadline | None, started: float) -> BaseMessage:
    """Invoke with our own retries: each attempt's timeout is what is left of the budget, and no
    attempt starts once it is spent."""
    for attempt in range(client.retries + 1):
        timeout = client.timeout_s if deadline is None else min(client.timeout_s, deadline.remaining())
        if timeout <= 0:
            raise _error(_failed(client, purpose, started, BUDGET_SPENT))
        try:
            return runnable.invoke(messages, timeout=timeout)
        except Exception as error:  # any transport, timeout or server error
            spent = deadline is not None and deadline.expired
            if attempt == client.retries or not _transient(error) or spent:
                reason = BUDGET_SPENT if spent else _describe(error)
                raise _error(_failed(client, purpose, started, reason)) from error
            pause = min(0.5 * 2**attempt, 8.0)
            time.sleep(pause if deadline is None else min(pause, deadline.remaining()))
    raise AssertionError("unreachable")


def call_text(client: RoleClient, messages: list[BaseMessage], purpose: str = "",
              deadline: Deadline | None = None) -> tuple[str, ModelCall]:
    """Free-text completion. Raises ModelError on failure or an empty answer."""
    started = time.perf_counter()
    message = _invoke(client, client.llm, messages, purpose, deadline, started)
    text = message.content if isinstance(message.content, str) else _join_parts(message.content)
    tokens_in, tokens_out = _usage(message)
    call = ModelCall(role=client.role, model=client.model_name, purpose=purpose,
                     input_tokens=tokens_in, output_tokens=tokens_out,
                     latency_ms=(time.perf_counter() - started) * 1000)
    if not text.strip():
        call.ok, call.error = False, "the model returned an empty answer"
        raise _error(call)
    return text.strip(), call


def call_structured(client: RoleClient, schema: type[T], messages: list[BaseMessage], purpose: str = "",
                    deadline: Deadline | None = None) -> tuple[T, ModelCall]:
    """A pydantic-typed answer through function calling, which both OpenAI and llama.cpp accept
    (llama.cpp's server rejects `response_format` of type `json_schema`). Malformed output raises."""
    started = time.perf_counter()
    try:
        bound = client.llm.bind_tools([schema], tool_choice=schema.__name__, parallel_tool_calls=False)
    except Exception as error:
        raise _error(_failed(client, purpose, started, _describe(error))) from error
    message = _invoke(client, bound, messages, purpose, deadline, started)
    tokens_in, tokens_out = _usage(message)
    call = ModelCall(role=client.role, model=client.model_name, purpose=purpose,
                     input_tokens=tokens_in, output_tokens=tokens_out,
                     latency_ms=(time.perf_counter() - started) * 1000)
    tool_calls = getattr(message, "tool_calls", None) or []
    if not tool_calls:
        call.ok, call.error = False, "malformed output: no structured answer"
        raise _error(call)
    try:
        return schema.model_validate(tool_calls[0]["args"]), call
    except ValidationError as error:
        call.ok, call.error = False, f"malformed output: {_describe(error)}"
        raise _error(call) from error


def _failed(client: RoleClient, purpose: str, started: float, error: str) -> ModelCall:
    return ModelCall(role=client.role, model=client.model_name, purpose=purpose, ok=False,
                     error=error, latency_ms=(time.perf_counter() - started) * 1000)


def _error(call: ModelCall) -> ModelError:
    error = ModelError(call.role, call.model, call.error or "unknown error")
    error.call = call  # so the caller can still put the failed call in the trace
    return error


def _join_parts(parts: list) -> str:
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in parts)
