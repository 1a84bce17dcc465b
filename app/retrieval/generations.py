"""Generations of a knowledge base's index and the pointer to the one readers use.

`cafbot kb index --rebuild` builds a new generation (a collection of its own) and, once it is
complete, switches the pointer to it; readers look at the pointer when a turn starts.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from app.retrieval.chroma_store import collection_name, collection_names, while_locked


class Pointer(NamedTuple):
    """Which generation of a knowledge base's index readers use."""

    generation: str
    previous: str = ""  # the generation it replaced, kept for readers still on it; "" if none


def pointer_name(kb_path: Path) -> str:
    """The pointer is the metadata of an empty collection of this name. Chroma has no alias, but a
    collection's metadata is one record, replaced whole by one update: a reader sees the old
    pointer or the new one, never half of each."""
    return f"{collection_name(kb_path)}-current"


def new_generation_name(kb_path: Path) -> str:
    # Sorts by when its build started; the random part keeps apart two builds started in the same
    # microsecond.
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")
    return f"{collection_name(kb_path)}-g{stamp}{secrets.token_hex(2)}"


def generations_of(client, kb_path: Path) -> list[str]:
    """This knowledge base's generations, oldest first: the first build, named after the knowledge
    base itself (as every index was before there were generations), then rebuilds by start."""
    base, names = collection_name(kb_path), collection_names(client)
    return [base] * (base in names) + sorted(n for n in names if n.startswith(f"{base}-g"))


def read_pointer(client, kb_path: Path) -> Pointer | None:
    from chromadb.errors import NotFoundError

    try:
        record = client.get_collection(pointer_name(kb_path), embedding_function=None).metadata or {}
    except NotFoundError:
        return None
    generation = str(record.get("generation") or "")
    return Pointer(generation, str(record.get("previous") or "")) if generation else None


def write_pointer(client, kb_path: Path, pointer: Pointer) -> None:
    record = {**pointer._asdict(), "switched_at": datetime.now(UTC).isoformat(timespec="seconds")}
    holder = client.get_or_create_collection(pointer_name(kb_path), embedding_function=None)
    while_locked(lambda: holder.modify(metadata=record))


def _get(client, name: str):
    """The collection `name`, or None if there is none."""
    from chromadb.errors import NotFoundError

    if not name:
        return None
    try:
        return client.get_collection(name, embedding_function=None)
    except NotFoundError:
        return None


def current_generation(client, kb_path: Path):
    """The complete generation to read, or None if there is none: the one the pointer names; if an
    operator deleted that one, the one it replaced; with no pointer, an index built before there
    were generations."""
    return named_by(client, kb_path, read_pointer(client, kb_path))


def named_by(client, kb_path: Path, pointer: Pointer | None):
    if pointer is None:
        return _get(client, collection_name(kb_path))
    return _get(client, pointer.generation) or _get(client, pointer.previous)


def is_gone(error: Exception) -> bool:
    from chromadb.errors import NotFoundError

    return isinstance(error, NotFoundError)
