"""A turn's checkpoints written only once the turn is accepted.

A turn lives in two stores: the checkpointer (what the conversation resumes from) and the turn log
(what people read back). They must never disagree: a replica that loses a race on a conversation
(the turn log already holds that turn number) must leave no saved state behind, or follow-ups
would be read against an answer nobody saw. LangGraph's savers have no way to take back a
checkpoint once written, so the turn's writes are held here while the graph runs and handed to the
real saver only after the turn log has accepted the turn; a refused turn's writes are dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)


class StagedCheckpoints(BaseCheckpointSaver):
    """Reads go to `saver`; writes too, except in a `staged(thread_id)` block, where they wait for
    `commit()`. Turns on one thread are never answered at once (the one-writer lock), so one list
    of held writes per thread is enough."""

    def __init__(self, saver: BaseCheckpointSaver):
        super().__init__(serde=saver.serde)
        self.saver = saver
        self._held: dict[str, list[tuple[str, tuple[Any, ...]]]] = {}
        self._guard = threading.Lock()

    @contextmanager
    def staged(self, thread_id: str) -> Iterator[Staged]:
        with self._guard:
            self._held[thread_id] = []
        try:
            yield Staged(self, thread_id)
        finally:
            with self._guard:
                self._held.pop(thread_id, None)

    def _hold(self, config: RunnableConfig, call: str, args: tuple[Any, ...]) -> bool:
        thread_id = config["configurable"]["thread_id"]
        with self._guard:
            held = self._held.get(thread_id)
            if held is None:
                return False
            held.append((call, args))
            return True

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        if not self._hold(config, "put", (config, checkpoint, metadata, new_versions)):
            return self.saver.put(config, checkpoint, metadata, new_versions)
        # What every saver returns: the config naming the checkpoint just written.
        return {"configurable": {"thread_id": config["configurable"]["thread_id"],
                                 "checkpoint_ns": config["configurable"].get("checkpoint_ns", ""),
                                 "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        if not self._hold(config, "put_writes", (config, writes, task_id, task_path)):
            self.saver.put_writes(config, writes, task_id, task_path)

    def get_tuple(self, config: RunnableConfig):
        return self.saver.get_tuple(config)

    def list(self, config: RunnableConfig | None, **kwargs: Any):
        return self.saver.list(config, **kwargs)

    def delete_thread(self, thread_id: str) -> None:
        self.saver.delete_thread(thread_id)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.saver.get_next_version(current, channel)

    def get_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]):
        return self.saver.get_delta_channel_history(config=config, channels=channels)


class Staged:
    """One turn's held writes."""

    def __init__(self, owner: StagedCheckpoints, thread_id: str):
        self._owner, self._thread_id = owner, thread_id

    def commit(self) -> None:
        """Write what the turn held, in the order the graph wrote it."""
        with self._owner._guard:
            held = self._owner._held.get(self._thread_id, [])
            self._owner._held[self._thread_id] = []
        saver = self._owner.saver
        for call, args in held:
            if call == "put":
                saver.put(*args)
            else:
                saver.put_writes(*args)
