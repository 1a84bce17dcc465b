"""The answer graph as LangGraph's own server runs it (`langgraph dev`, `langgraph up`);
`langgraph.json` names `make_graph`.

The server calls `make_graph` for every run and for every read of the graph or of a thread. The
services (embedder, index, learned screens) are built once per process, in a thread of their own
that starts with the server (`app`, langgraph.json's `http.app`), so the server's event loop never
waits on them and a turn waits only while they are not ready yet; a read of the graph or a thread
before that needs no services and gets the same graph without them. Each turn's last step writes
it to the turn log, masked, as `Chatbot.ask` does.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph_sdk.runtime import ServerRuntime
from starlette.applications import Starlette

from app.core.config import Settings
from app.core.records import CHECKPOINT_TYPES
from app.graph.builder import build_graph
from app.graph.services import Services
from app.graph.state import ChatState
from app.store import Database, TurnConflict, TurnLog

log = logging.getLogger(__name__)

_building = threading.Lock()
_served: CompiledStateGraph | None = None


async def make_graph(runtime: ServerRuntime) -> CompiledStateGraph:
    """For `langgraph.json`: the graph on the effective configuration (`cafbot.toml`, `CAFBOT_`
    variables, in the server's working directory); the server supplies the checkpointer."""
    if _served is None and runtime.execution_runtime is None:
        return _outline()  # a schema, a drawing or a thread's state: no node runs
    return _served or await asyncio.to_thread(_serve)


@asynccontextmanager
async def _build_at_start(_app: Starlette) -> AsyncIterator[None]:
    # A daemon thread, not the loop's executor: stopping the server need not wait for the build.
    threading.Thread(target=_serve_or_log, name="cafbot-services", daemon=True).start()
    yield


app = Starlette(lifespan=_build_at_start)  # langgraph.json's `http.app`: no routes of its own


def _serve_or_log() -> None:
    try:
        _serve()
    except Exception:  # the first turn builds again and reports the error to its client
        log.exception("building the services at start failed")


def _serve() -> CompiledStateGraph:
    global _served
    with _building:  # concurrent first runs wait for one build
        if _served is None:
            settings = Settings()
            services = Services.from_settings(settings)
            services.warm_up()  # the first answers as fast as the later ones
            turn_log = TurnLog(Database.open(settings.data_dir, settings.store_url))
            _served = _keeping_record_types(build_graph(services, record_turn=recorder(turn_log)))
        return _served


@functools.cache
def _outline() -> CompiledStateGraph:
    # The server wants the same nodes and edges in every call, so the turn log step is there too.
    return _keeping_record_types(build_graph(Services.__new__(Services), record_turn=recorder(None)))


def recorder(turn_log: TurnLog | None) -> Callable[[ChatState, RunnableConfig], dict]:
    def record_turn(state: ChatState, config: RunnableConfig) -> dict:
        """Write the finished turn to the turn log (contact details masked), under its thread."""
        thread_id = (config.get("configurable") or {}).get("thread_id")
        if turn_log is None or thread_id is None:
            return {}
        trace = state["trace"].model_copy(update={"thread_id": str(thread_id)})
        turn_log.start_conversation(trace.thread_id, caf_mode=trace.caf_mode)
        try:
            turn_log.record(trace)
        except TurnConflict:
            # Only a run from an earlier checkpoint of the thread (Studio's edit, a fork in place)
            # answers a turn again: the server never runs two turns of one thread at once.
            log.warning("turn %d of thread %s is recorded already; the turn log keeps the first answer",
                        trace.turn, trace.thread_id)
        if trace.route == "crisis":
            log.warning("crisis route taken in thread %s (turn %d)", trace.thread_id, trace.turn)
        return {"trace": trace}

    return record_turn


class _RecordTypesKept(CompiledStateGraph):
    """The server runs a copy of the graph (`Pregel.copy`), and in LangGraph 1.2 a copy forgets
    the record types the graph registers for strict checkpoint reading: with
    LANGGRAPH_STRICT_MSGPACK=true the second turn would read the first one's records as dicts.
    This graph's copies keep them."""

    def copy(self, update: dict[str, Any] | None = None) -> _RecordTypesKept:
        copied = super().copy(update)
        copied._serde_allowlist = self._serde_allowlist
        return copied


def _keeping_record_types(graph: CompiledStateGraph) -> CompiledStateGraph:
    kept = _RecordTypesKept(**{k: v for k, v in graph.__dict__.items() if k != "__orig_class__"})
    # What LangGraph found in the state's types (under strict reading), and every record type the
    # state holds in any case; LangGraph reads this only when strict reading is on.
    kept._serde_allowlist = (graph._serde_allowlist or set()) | {
        (kind.__module__, kind.__name__) for kind in CHECKPOINT_TYPES}
    return kept
