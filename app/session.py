"""Running conversations: the graph, its checkpointer and the turn log, opened together.

The CLI, the app and the drift runner all go through `Chatbot`: one object per process, many
conversation threads. A failing turn never loses what the conversation already holds: the graph
only writes a turn's messages in its last node.
"""

from __future__ import annotations

import logging
import uuid
from contextlib import ExitStack
from typing import Any

from langchain_core.messages import AnyMessage

from app.config import Settings
from app.errors import CafbotError
from app.graph.builder import build_graph
from app.graph.checkpoint import open_checkpointer
from app.graph.services import Services
from app.graph.state import TurnTrace
from app.storage import TurnLog

log = logging.getLogger(__name__)


class TurnFailed(CafbotError):
    """A turn could not be completed; the conversation is unchanged."""


class Chatbot:
    def __init__(self, settings: Settings, services: Services | None = None, *, show_progress: bool = False):
        self.settings = settings
        self.services = services or Services.from_settings(settings, show_progress=show_progress)
        self._stack = ExitStack()
        checkpointer = self._stack.enter_context(open_checkpointer(settings))
        self.graph = build_graph(self.services, checkpointer)
        self.turn_log = TurnLog(settings.data_dir / "turns.sqlite")
        self._stack.callback(self.turn_log.close)

    def __enter__(self) -> Chatbot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()

    def new_thread(self, label: str = "", **metadata: Any) -> str:
        thread_id = uuid.uuid4().hex[:12]
        self.turn_log.start_conversation(thread_id, caf_enabled=self.services.caf is not None,
                                         label=label, metadata=metadata)
        return thread_id

    def ask(self, thread_id: str, text: str) -> TurnTrace:
        """One turn. Returns the turn's trace; `trace.answer` is what the user sees."""
        config = {"configurable": {"thread_id": thread_id}}
        self.turn_log.start_conversation(thread_id, caf_enabled=self.services.caf is not None)
        try:
            # One checkpoint per turn, written when the turn ends: a turn that fails midway leaves
            # the conversation exactly as it was, and a turn costs one write instead of one per node.
            result = self.graph.invoke({"user_input": text}, config, durability="exit")
        except CafbotError:
            raise
        except Exception as error:  # a bug or an unexpected failure: report it, keep the thread
            log.exception("turn failed in thread %s", thread_id)
            raise TurnFailed(
                f"Sorry, something went wrong while answering ({type(error).__name__}: {error}). "
                "Your conversation so far is kept; please try again."
            ) from error
        trace: TurnTrace = result["trace"].model_copy(update={"thread_id": thread_id})
        if trace.route == "crisis":
            log.warning("crisis route taken in thread %s (turn %d)", thread_id, trace.turn)
        self.turn_log.record(trace)
        return trace

    def messages(self, thread_id: str) -> list[AnyMessage]:
        state = self.graph.get_state({"configurable": {"thread_id": thread_id}})
        return list(state.values.get("messages", []))

    def state(self, thread_id: str) -> dict[str, Any]:
        return dict(self.graph.get_state({"configurable": {"thread_id": thread_id}}).values)
