"""Running conversations: the graph, its checkpointer and the turn log, opened together.

The CLI, the app and the drift runner all go through `Chatbot`: one object per process, many
conversation threads, and the filter's mode chosen per turn, so one chatbot serves the CAF on and
off conditions. A failing turn never loses what the conversation already holds: the graph writes
one checkpoint per turn, when the turn ends.
"""

from __future__ import annotations

import fcntl
import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import AnyMessage

from app.core.config import Settings
from app.core.errors import CafbotError
from app.core.records import CafMode, TurnTrace
from app.graph.builder import build_graph
from app.graph.checkpoint import open_checkpointer
from app.graph.services import Services
from app.graph.state import TurnContext
from app.store import Conversation, Database, StoreError, TurnLog

log = logging.getLogger(__name__)


class TurnFailed(CafbotError):
    """A turn could not be completed; the conversation is unchanged."""


class UnknownThread(CafbotError):
    """No conversation has this id."""


class ConversationBusy(CafbotError):
    """Another turn is being answered in this conversation."""


@contextmanager
def one_writer(lock_dir: Path, thread_id: str, timeout_s: float) -> Iterator[None]:
    """Serialise turns on one conversation across threads and processes (an advisory file lock per
    thread): two askers at once would both build turn N from the same checkpoint, and one would be
    lost. The second waits up to `timeout_s`, then is told the conversation is busy."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    with open(lock_dir / f"{thread_id}.lock", "a+") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ConversationBusy(
                        f"Conversation {thread_id} is busy answering another message; "
                        "please wait for that answer and try again.") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class Chatbot:
    def __init__(self, settings: Settings, services: Services | None = None, *, show_progress: bool = False):
        self.settings = settings
        self.services = services or Services.from_settings(settings, show_progress=show_progress)
        self._stack = ExitStack()
        self.checkpointer = self._stack.enter_context(open_checkpointer(settings))
        self.graph = build_graph(self.services, self.checkpointer)
        self.store = Database.in_data_dir(settings.data_dir)
        self._stack.callback(self.store.close)
        self.turn_log = TurnLog(self.store)

    def __enter__(self) -> Chatbot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()

    def new_thread(self, label: str = "", *, caf: CafMode | None = None, **metadata: Any) -> str:
        thread_id = uuid.uuid4().hex[:12]
        self.turn_log.start_conversation(thread_id, caf_mode=caf or self.services.default_caf_mode,
                                         label=label, metadata=metadata)
        return thread_id

    def ask(self, thread_id: str, text: str, *, caf: CafMode | None = None) -> TurnTrace:
        """One turn. `caf` chooses the filter for this turn (on, off, tier0; default: the
        configuration's). Returns the turn's trace; `trace.answer` is what the user sees."""
        mode = caf or self.services.default_caf_mode
        with one_writer(self.settings.data_dir / "locks", thread_id, self.settings.turn_lock_timeout_s):
            return self._ask(thread_id, text, mode)

    def _ask(self, thread_id: str, text: str, mode: CafMode) -> TurnTrace:
        self.turn_log.start_conversation(thread_id, caf_mode=mode)
        recorded = self.turn_log.conversation(thread_id).turns  # counted in SQL, no trace parsed
        if recorded and not self.state(thread_id):
            raise StoreError(
                f"{self.settings.checkpoint_path}: conversation {thread_id} has {recorded} recorded "
                "turns but no saved state; the conversation store was emptied or replaced. Restore it "
                "from a backup, or start a new conversation.")
        try:
            # One checkpoint per turn, written when the turn ends: a turn that fails midway leaves
            # the conversation exactly as it was, and a turn costs one write instead of one per node.
            result = self.graph.invoke({"user_input": text}, _config(thread_id), durability="exit",
                                       context=TurnContext(caf=mode))
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

    def fork(self, thread_id: str, at_turn: int, *, label: str = "", **metadata: Any) -> str:
        """A new conversation that starts as `thread_id` stood after turn `at_turn` (0: empty).
        Drift runs branch every sample and every CAF condition from one checkpoint this way."""
        if at_turn < 0:
            raise ValueError("at_turn must be 0 or more")
        snapshot = None
        if at_turn > 0:
            snapshot = next((s for s in self.graph.get_state_history(_config(thread_id))
                             if s.values.get("turn") == at_turn and not s.next), None)
            if snapshot is None:
                raise UnknownThread(f"conversation {thread_id} has no completed turn {at_turn}")
        parent = self.turn_log.conversation(thread_id)
        new_id = uuid.uuid4().hex[:12]
        self.turn_log.start_conversation(new_id, caf_mode=parent.caf_mode if parent else "on", label=label,
                                         parent_thread_id=thread_id, forked_at_turn=at_turn, metadata=metadata)
        if snapshot is not None:
            self.graph.update_state(_config(new_id), snapshot.values, as_node="respond")
            self.turn_log.copy_turns(thread_id, new_id, upto=at_turn)
        return new_id

    def list_threads(self, *, limit: int | None = None) -> list[Conversation]:
        return self.turn_log.conversations(limit=limit)

    def delete(self, thread_id: str) -> bool:
        """Remove a conversation from every store: its checkpoints and its turn log."""
        self.checkpointer.delete_thread(thread_id)
        return self.turn_log.delete(thread_id)

    def messages(self, thread_id: str) -> list[AnyMessage]:
        return list(self.state(thread_id).get("messages", []))

    def state(self, thread_id: str) -> dict[str, Any]:
        return dict(self.graph.get_state(_config(thread_id)).values)


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}
