"""Running conversations: the graph, its checkpointer and the turn log, opened together.

The CLI, the app and the drift runner all go through `Chatbot`: one object per process, many
conversation threads, and the filter's mode chosen per turn, so one chatbot serves the CAF on and
off conditions. A failing turn never loses what the conversation already holds: the graph writes
one checkpoint per turn, when the turn ends.

`Conversations` is the light half: the two stores alone (checkpointer and turn log), for listing,
showing, deleting and purging conversations without loading a model or the index. A `Chatbot`
owns one, and applies `retention_days` through it when it opens.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from app.core.config import Settings
from app.core.errors import CafbotError
from app.core.files import held_lock, private_dir
from app.core.records import CafMode, TurnTrace
from app.graph.builder import build_graph
from app.graph.checkpoint import location as checkpoint_location
from app.graph.checkpoint import open_checkpointer
from app.graph.services import Services
from app.graph.staging import StagedCheckpoints
from app.graph.state import TurnContext
from app.store import Conversation, Database, StoreError, TurnLog
from app.store.locks import advisory_lock

log = logging.getLogger(__name__)


THREAD_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class TurnFailed(CafbotError):
    """A turn could not be completed; the conversation is unchanged."""


class UnknownThread(CafbotError):
    """No conversation has this id."""


class ConversationBusy(CafbotError):
    """Another turn is being answered in this conversation."""


@contextmanager
def one_writer(lock_dir: Path, thread_id: str, timeout_s: float, pool: Any = None) -> Iterator[None]:
    """Serialise turns on one conversation across threads, processes and machines: two askers at
    once would both build turn N from the same checkpoint, and one would be lost. With the
    conversations in Postgres (`pool`: the checkpointer's connections) the lock is a Postgres
    advisory lock, which every replica sees; else an advisory file lock in `lock_dir`, which every
    process on this machine sees. The second asker waits up to `timeout_s`, then is told the
    conversation is busy."""
    if not THREAD_ID.fullmatch(thread_id):  # it names a file or a lock: no "../", no separators
        raise UnknownThread(f"{thread_id!r} is not a conversation id (letters, digits, '-' and '_', "
                            "up to 64); `cafbot conversations list` shows yours.")

    def busy() -> ConversationBusy:
        return ConversationBusy(f"Conversation {thread_id} is busy answering another message; please wait "
                                "for that answer and try again.")

    if pool is None:
        with held_lock(private_dir(lock_dir) / f"{thread_id}.lock", timeout_s, busy=busy):  # 0700, 0600
            yield
        return
    # The lock's connection is held for the turn; if it drops, the lock goes with it, and the
    # turn log's one row per turn number stops a second writer from saving a second answer.
    with pool.connection() as conn, advisory_lock(conn, f"cafbot:conversation:{thread_id}", timeout_s, busy):
        yield


class Conversations:
    """Every store a conversation lives in, without the answer graph: LangGraph's checkpointer
    (what a conversation resumes from) and the turn log (what people read back). Deleting and
    purging go through here, so no store is forgotten."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.lock_dir = settings.data_dir / "locks"
        self._stack = ExitStack()
        try:
            saver = self._stack.enter_context(open_checkpointer(settings))
            self.store = Database.open(settings.data_dir, settings.store_url)
            self._stack.callback(self.store.close)
        except BaseException:
            self._stack.close()
            raise
        self.checkpointer = StagedCheckpoints(saver)
        # Postgres's connections, for a lock every replica sees (None: the conversations are in a file).
        self._pool = saver.conn if settings.checkpointer.kind == "postgres" else None
        self.turn_log = TurnLog(self.store)

    def __enter__(self) -> Conversations:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()

    def recent(self, *, limit: int | None = None) -> list[Conversation]:
        """Every conversation, newest activity first."""
        return self.turn_log.conversations(limit=limit)

    def get(self, thread_id: str) -> Conversation:
        found = self.turn_log.conversation(thread_id)
        if found is None:
            raise _unknown(thread_id)
        return found

    def turns(self, thread_id: str) -> list[TurnTrace]:
        """The recorded turns, as the turn log keeps them (contact details masked)."""
        self.get(thread_id)
        return self.turn_log.turns(thread_id)

    def exists(self, thread_id: str) -> bool:
        """Whether any store knows the conversation."""
        return (self.turn_log.conversation(thread_id) is not None
                or self.checkpointer.get_tuple(_config(thread_id)) is not None)

    def one_writer(self, thread_id: str, timeout_s: float | None = None) -> AbstractContextManager[None]:
        """The conversation's writer lock (see `one_writer`), on this deployment's stores."""
        return one_writer(self.lock_dir, thread_id,
                          self.settings.turn_lock_timeout_s if timeout_s is None else timeout_s, self._pool)

    def require(self, thread_id: str) -> None:
        if not self.exists(thread_id):
            raise _unknown(thread_id)

    def delete(self, thread_id: str) -> bool:
        """Remove a conversation from every store: its checkpoints and its turn log. Waits for a
        turn being answered in it to finish first. False if no store knew the conversation."""
        if not self.exists(thread_id):
            return False
        with self.one_writer(thread_id):
            self._delete(thread_id)
        return True

    def idle(self, older_than: timedelta, *, now: datetime | None = None) -> list[Conversation]:
        """Conversations whose last activity (last turn, or creation) is older than `older_than`."""
        cutoff = (now or datetime.now(UTC)) - older_than
        return [c for c in self.recent() if c.last_activity < cutoff]

    def purge(self, older_than: timedelta, *, now: datetime | None = None) -> list[str]:
        """Delete every conversation idle for longer than `older_than` from every store; returns
        the ids deleted. One being answered at this moment is not idle, and is left alone."""
        now = now or datetime.now(UTC)
        deleted = []
        for conversation in self.idle(older_than, now=now):
            thread_id = conversation.thread_id
            try:
                with self.one_writer(thread_id, timeout_s=0):
                    # Checked again under the lock: a turn may have ended since the list was read.
                    current = self.turn_log.conversation(thread_id)
                    if current is not None and current.last_activity >= now - older_than:
                        continue
                    self._delete(thread_id)
            except ConversationBusy:
                continue
            deleted.append(thread_id)
        return deleted

    def apply_retention(self) -> list[str]:
        """The `retention_days` setting: conversations idle longer are deleted (None: kept)."""
        if self.settings.retention_days is None:
            return []
        deleted = self.purge(timedelta(days=self.settings.retention_days))
        if deleted:
            log.info("retention: deleted %d conversations idle for more than %d days",
                     len(deleted), self.settings.retention_days)
        return deleted

    def _delete(self, thread_id: str) -> None:
        self.checkpointer.delete_thread(thread_id)
        self.turn_log.delete(thread_id)


class Chatbot:
    def __init__(self, settings: Settings, services: Services | None = None, *, show_progress: bool = False):
        self.settings = settings
        self.services = services or Services.from_settings(settings, show_progress=show_progress)
        self._stack = ExitStack()
        self.conversations = self._stack.enter_context(Conversations(settings))
        self.conversations.apply_retention()
        self.checkpointer = self.conversations.checkpointer
        self.store, self.turn_log = self.conversations.store, self.conversations.turn_log
        self.graph = build_graph(self.services, self.checkpointer)
        # Conversations whose saved state this process has seen (or written): checked once, not
        # at every turn, since reading the state again costs a checkpoint read per turn.
        self._state_seen: set[str] = set()

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

    def ask(self, thread_id: str, text: str, *, caf: CafMode | None = None,
            on_step: Callable[[str], None] | None = None) -> TurnTrace:
        """One turn. `caf` chooses the filter for this turn (on, off, tier0; default: the
        configuration's). `on_step` is told each step's name as it finishes (the app shows them).
        Returns the turn's trace; `trace.answer` is what the user sees."""
        mode = caf or self.services.default_caf_mode
        try:
            with self.conversations.one_writer(thread_id):
                return self._ask(thread_id, text, mode, on_step or (lambda _step: None))
        except CafbotError:
            raise
        except Exception as error:  # a store out of reach, a bug: reported, the conversation kept
            raise _turn_failed(thread_id, error) from error

    def _ask(self, thread_id: str, text: str, mode: CafMode, on_step: Callable[[str], None]) -> TurnTrace:
        known = self.turn_log.conversation(thread_id)
        if known is None:
            self.turn_log.start_conversation(thread_id, caf_mode=mode)
        recorded = known.turns if known else 0  # counted in SQL, no trace parsed
        if recorded and thread_id not in self._state_seen:
            self._check_stores_agree(thread_id, recorded)
        # One checkpoint per turn, written when the turn ends and only once the turn log has taken
        # the turn: a turn that fails midway, or loses a race with another replica, leaves the
        # conversation exactly as it was in both stores.
        with self.checkpointer.staged(thread_id) as staged:
            result: dict[str, Any] = {}
            for kind, chunk in self.graph.stream({"user_input": text}, _config(thread_id), durability="exit",
                                                 context=TurnContext(caf=mode), stream_mode=["updates", "values"]):
                if kind == "values":
                    result = chunk
                else:
                    for step in chunk:
                        on_step(step)
            trace: TurnTrace = result["trace"].model_copy(update={"thread_id": thread_id})
            self.turn_log.record(trace)  # TurnConflict: another writer has this turn; ours is dropped
            try:
                staged.commit()
            except Exception:  # the state could not be saved: take the turn back out of the log
                self._forget_turn(thread_id, trace.turn)
                raise
        self._state_seen.add(thread_id)
        if trace.route == "crisis":
            log.warning("crisis route taken in thread %s (turn %d)", thread_id, trace.turn)
        return trace

    def _check_stores_agree(self, thread_id: str, recorded: int) -> None:
        """Once per conversation and process: the saved state holds as many turns as the turn log,
        or the next answer would be read against another history than the one people see."""
        saved = int(self.state(thread_id).get("turn", 0))
        where = f"{checkpoint_location(self.settings)}: conversation {thread_id} has {recorded} recorded turns"
        if not saved:
            raise StoreError(f"{where} but no saved state; the conversation store was emptied or replaced. "
                             "Restore it from a backup, or start a new conversation.")
        if saved != recorded:
            raise StoreError(f"{where} but its saved state holds {saved}; the two stores were restored from "
                             "different moments. Restore them together, or start a new conversation.")

    def _forget_turn(self, thread_id: str, turn: int) -> None:
        try:
            self.turn_log.remove_turn(thread_id, turn)
        except Exception:  # both stores are out of reach: the next turn's check reports it
            log.exception("turn %d of thread %s is in the turn log without its saved state", turn, thread_id)

    def seed_turn(self, thread_id: str, user: str, assistant: str) -> TurnTrace:
        """Write a finished turn into a conversation as given, without running the graph: the
        drift tests' checkpoint conversations hold the answer on which the bot first drifted,
        written once so that every branch starts from it."""
        with self.conversations.one_writer(thread_id):
            self.turn_log.start_conversation(thread_id, caf_mode=self.services.default_caf_mode)
            turn = int(self.state(thread_id).get("turn", 0)) + 1
            trace = TurnTrace(thread_id=thread_id, turn=turn, user_message=user, answer=assistant,
                              route="answer", generator="fixed", caf_mode="off",
                              notices=["written into the conversation as given (a checkpoint), not generated"])
            self.graph.update_state(_config(thread_id), {
                "messages": [HumanMessage(user), AIMessage(assistant)], "turn": turn, "trace": trace,
                "answer": assistant, "user_input": user}, as_node="respond")
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
        return self.conversations.recent(limit=limit)

    def delete(self, thread_id: str) -> bool:
        """Remove a conversation from every store: its checkpoints and its turn log."""
        self._state_seen.discard(thread_id)
        return self.conversations.delete(thread_id)

    def messages(self, thread_id: str) -> list[AnyMessage]:
        return list(self.state(thread_id).get("messages", []))

    def state(self, thread_id: str) -> dict[str, Any]:
        return dict(self.graph.get_state(_config(thread_id)).values)


def _turn_failed(thread_id: str, error: Exception) -> TurnFailed:
    """One line for the person asking; the details in the log. A store out of reach (a restart,
    a failover) is a moment to wait, not a bug."""
    if _unreachable(error):
        log.warning("turn in thread %s: a store is out of reach (%s)", thread_id, error)
        return TurnFailed("Sorry, the conversation store is not reachable just now. Your conversation so far "
                          "is kept; please try again in a moment.")
    log.error("turn failed in thread %s", thread_id, exc_info=error)
    return TurnFailed(f"Sorry, something went wrong while answering ({type(error).__name__}: {error}). "
                      "Your conversation so far is kept; please try again.")


def _unreachable(error: BaseException) -> bool:
    from sqlalchemy.exc import OperationalError

    names = {type(e).__name__ for e in _chain(error)}
    return isinstance(error, OperationalError) or bool(names & {"OperationalError", "PoolTimeout", "InterfaceError"})


def _chain(error: BaseException) -> Iterator[BaseException]:
    while error is not None:
        yield error
        error = error.__cause__ or error.__context__


def _unknown(thread_id: str) -> UnknownThread:
    return UnknownThread(f"No conversation {thread_id}; `cafbot conversations list` shows them.")


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}
