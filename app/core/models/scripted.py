"""A scripted chat model: the test double for every LLM role, and the zero-latency model of the
benchmarks. It answers from a queue or a function, remembers every prompt it received, and fails
loudly when asked for more answers than it was given.

A reply may be:
- a string: the model's text;
- a dict or pydantic model: a tool call carrying that structure (what `with_structured_output`
  parses when the caller bound a schema);
- an exception instance: raised, to inject faults (timeouts, server errors);
- a callable taking the messages: its return value is used as the reply.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

Reply = str | dict | BaseModel | BaseException | Callable[[list[BaseMessage]], Any]


class ScriptExhausted(AssertionError):
    """The code under test made more model calls than the script allowed."""


class ScriptedChatModel(BaseChatModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    name_: str = "scripted"
    delay_s: float = 0.0
    tokens_per_word: float = 1.3  # a rough count so benchmarks can compare token use
    _queue: deque = PrivateAttr(default_factory=deque)
    _responder: Callable[[list[BaseMessage]], Any] | None = PrivateAttr(default=None)
    _tool_name: str | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)  # every prompt received, in order

    def __init__(self, replies: Iterable[Reply] = (), *, respond: Callable | None = None, **kwargs):
        super().__init__(**kwargs)
        self.prompts = []
        self._queue = deque(replies)
        self._responder = respond

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def enqueue(self, *replies: Reply) -> ScriptedChatModel:
        self._queue.extend(replies)
        return self

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        bound = self.model_copy()
        bound._queue, bound._responder, bound._lock = self._queue, self._responder, self._lock
        bound.prompts = self.prompts  # shared, so the test sees calls made through the binding
        first = tools[0] if tools else None
        bound._tool_name = getattr(first, "__name__", None) or (first or {}).get("name", "tool") if first else None
        return bound

    def _next_reply(self, messages: list[BaseMessage]) -> Any:
        with self._lock:
            self.prompts.append(list(messages))
            responder = self._responder
            if responder is None and not self._queue:
                raise ScriptExhausted(
                    f"scripted model got call #{len(self.prompts)} but its script is empty; "
                    f"last message: {messages[-1].content!r:.200}"
                )
            reply = responder if responder is not None else self._queue.popleft()
        # Replies are computed outside the lock, so concurrent callers really run concurrently.
        return reply(messages) if callable(reply) and not isinstance(reply, BaseModel) else reply

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._next_reply(messages)
        if self.delay_s:
            time.sleep(self.delay_s)
        if isinstance(reply, BaseException):
            raise reply
        words_in = sum(len(str(m.content).split()) for m in messages)
        if isinstance(reply, BaseModel | dict):
            args = reply.model_dump() if isinstance(reply, BaseModel) else reply
            message = AIMessage(
                content="",
                tool_calls=[{"name": self._tool_name or "answer", "args": args, "id": uuid.uuid4().hex}],
            )
            words_out = len(str(args).split())
        else:
            message = AIMessage(content=str(reply))
            words_out = len(str(reply).split())
        message.usage_metadata = {
            "input_tokens": int(words_in * self.tokens_per_word),
            "output_tokens": int(words_out * self.tokens_per_word),
            "total_tokens": int((words_in + words_out) * self.tokens_per_word),
        }
        return ChatResult(generations=[ChatGeneration(message=message)])
