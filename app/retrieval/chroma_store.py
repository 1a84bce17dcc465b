"""The Chroma store under the chunk index: its client (embedded, on disk, or a server), its errors
read as ours (damaged, or busy with another process's write), and the locks around writing it."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from urllib.parse import urlparse

from app.core.config import Settings
from app.core.config_sections import CHROMA_PORT
from app.core.errors import CafbotError, ConfigError


def collection_name(kb_path: Path) -> str:
    """One collection per knowledge-base folder, so two knowledge bases never share an index."""
    key = hashlib.sha1(str(kb_path.resolve()).encode()).hexdigest()[:16]
    return f"cafbot-{key}"


def chroma_client(settings: Settings):
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    url = settings.retrieval.chroma_url
    if not url:
        settings.index_dir.mkdir(parents=True, exist_ok=True)
        # Chroma caches one system per path string in each process: a relative path would make
        # ".cafbot/index" in two working directories share the first one's database.
        return chromadb.PersistentClient(path=str(settings.index_dir.resolve()), settings=chroma_settings)
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"retrieval.chroma_url: {url!r} is not an http(s) URL of a Chroma server.")
    return chromadb.HttpClient(host=parsed.hostname, ssl=parsed.scheme == "https",
                               port=parsed.port or (443 if parsed.scheme == "https" else CHROMA_PORT),
                               settings=chroma_settings)


REBUILD_COMMAND = "cafbot kb index --rebuild"


class IndexDamaged(CafbotError):
    """The index cannot be opened or read; the message names it and the repair command."""


class IndexBusy(CafbotError):
    """Another process holds the local index's write lock: nothing is damaged, and rebuilding
    would throw away what that process is writing."""


LOCK_RETRIES = 5


def _is_locked(error: Exception) -> bool:
    """SQLite's refusal while another connection holds the write lock."""
    return "database is locked" in str(error)


@contextmanager
def reading_index(settings: Settings) -> Iterator[None]:
    """Chroma's own errors (a damaged SQLite file or vector segment, an unreadable folder, a server
    that fails) become one line naming the index and `cafbot kb index --rebuild`."""
    try:
        yield
    except CafbotError:
        raise
    except Exception as error:
        if _is_locked(error) and not settings.retrieval.chroma_url:
            raise IndexBusy(f"{settings.index_dir}: the search index is busy (another cafbot process is "
                            "writing to it); try again in a moment.") from error
        reason = (str(error).strip().splitlines() or [""])[0][:200]
        reason = f"{type(error).__name__}: {reason}" if reason else type(error).__name__
        if settings.retrieval.chroma_url:
            raise IndexDamaged(
                f"{settings.retrieval.chroma_url}: the Chroma server failed ({reason}). Check that it "
                f"is running; if its collection is damaged, rebuild it with `{REBUILD_COMMAND}`."
            ) from error
        raise IndexDamaged(
            f"{settings.index_dir}: the search index cannot be opened or read ({reason}). "
            f"Rebuild it with `{REBUILD_COMMAND}`.") from error


def while_locked(write: Callable[[], object], retries: int = LOCK_RETRIES) -> None:
    """A write to the local index, tried again while another connection holds SQLite's lock (a
    second process opening the same index, or Chroma's own background flush)."""
    for attempt in range(retries):
        try:
            write()
            return
        except Exception as error:
            if not _is_locked(error) or attempt == retries - 1:
                raise
            time.sleep(0.1 * 2 ** attempt)


def remove_local_index(settings: Settings) -> str:
    """Remove a local index that cannot even be opened: it holds only derived data, and other
    knowledge bases' collections in it are rebuilt on their next use. Returns what was done, for
    the user."""
    folder = settings.index_dir
    _forget_local_clients()
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        try:
            shutil.rmtree(folder)
        except OSError as error:
            raise IndexDamaged(f"{folder}: cannot remove the damaged index ({error.strerror or error}); "
                               "remove the folder by hand and run the command again.") from error
    return f"Removed the damaged index folder {folder}."


def collection_names(client) -> set[str]:
    return {getattr(c, "name", c) for c in client.list_collections()}


def index_building(settings: Settings) -> AbstractContextManager:
    """Held while a local index is built or rebuilt: a process starting with it waits rather than
    build it too (Chroma creating the same empty database twice at once fails with "table
    collections already exists"). Not a conversation's "<id>.lock"; a server needs none."""
    if settings.retrieval.chroma_url:
        return nullcontext()
    from app.core.files import held_lock, private_dir

    return held_lock(private_dir(settings.data_dir / "locks") / "index.building")



def _forget_local_clients() -> None:
    """Chroma caches one system per folder in each process; after the folder is removed the cache
    would point at deleted files."""
    try:
        from chromadb.api.shared_system_client import SharedSystemClient
    except ImportError:  # older chromadb
        from chromadb.api.client import SharedSystemClient
    SharedSystemClient.clear_system_cache()
