"""What the local checks work out from their data files, kept on disk so that the next process
reads it instead of working it out again (a short command pays for start-up on every call).

An entry is named by a digest of everything it was derived from, so an edited data file, an
edited module or another Python never meets an old entry: it derives afresh and writes a new one.
A cache only: an entry that cannot be read or written is derived in memory, as without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from app.core.embeddings import default_cache_dir

CACHE_DIR = default_cache_dir() / "derived"


def key_of(*inputs: bytes) -> str:
    """A digest of the inputs and of the running Python (its `re` and `unicodedata` decide much)."""
    digest = hashlib.sha256(sys.version.encode())
    for part in inputs:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()[:32]


def read(name: str, key: str, folder: Path | None = None) -> Any | None:
    """The entry `name` derived from `key`'s inputs, or None when there is none (or it is unreadable)."""
    try:
        return json.loads(_path(name, key, folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write(name: str, key: str, value: Any, folder: Path | None = None) -> None:
    """Keep `value` (JSON) for the next process; whole or absent, never half an entry."""
    path = _path(name, key, folder)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def _path(name: str, key: str, folder: Path | None) -> Path:
    return (folder or CACHE_DIR) / f"{name}-{key}.json"
