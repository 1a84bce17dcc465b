"""Private by default: the folders cafbot creates under its data dir are 0700 and the files it
writes there (conversations, the turn log, lock files, logs) 0600, whatever the process umask.

Existing files and folders are tightened too, so a data dir made by an older cafbot becomes private
the next time it is opened. SQLite databases need one more step, `private_sqlite`: SQLite creates
a database's `-wal`, `-shm` and `-journal` files later, with the database file's own permissions
(its unix VFS copies them), so creating the database file 0600 before SQLite opens it makes its
siblings 0600 as well. The tests check the real files after a real turn.
"""

from __future__ import annotations

import fcntl
import logging
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from app.core.errors import ConfigError

DIR_MODE = 0o700
FILE_MODE = 0o600
SQLITE_SIBLINGS = ("-wal", "-shm", "-journal")

log = logging.getLogger(__name__)


def private_dir(path: Path) -> Path:
    """Create `path` (and any missing parents) with mode 0700, or tighten it to 0700."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    try:
        for folder in reversed(missing):
            folder.mkdir(mode=DIR_MODE, exist_ok=True)
    except OSError as error:
        raise _cannot_create(path, error) from error
    _tighten(path, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create `path` empty with mode 0600 if it is missing, or tighten it to 0600. The content of
    an existing file is never touched."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_CREAT, FILE_MODE))
    except OSError as error:
        raise _cannot_create(path, error) from error
    _tighten(path, FILE_MODE)
    return path


def private_sqlite(path: Path) -> Path:
    """Make a SQLite database file private before SQLite opens it: the file itself (created empty,
    which SQLite reads as an empty database) and any `-wal`, `-shm` or `-journal` left over."""
    private_dir(path.parent)
    private_file(path)
    for suffix in SQLITE_SIBLINGS:
        sibling = path.with_name(path.name + suffix)
        if sibling.exists():
            _tighten(sibling, FILE_MODE)
    return path


@contextmanager
def held_lock(path: Path, timeout_s: float | None = None,
              busy: Callable[[], Exception] | None = None) -> Iterator[None]:
    """An advisory lock on the private file `path`, held across threads and processes for the
    block. Waits for it as long as it takes (`timeout_s` None), or raises `busy()` (by default a
    TimeoutError naming `path`) after `timeout_s`."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    with open(private_file(path), "a+") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise (busy() if busy else TimeoutError(f"{path}: held by another process")) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _cannot_create(path: Path, error: OSError) -> ConfigError:
    return ConfigError(f"{path}: cannot create it ({error.strerror or error}). Check that the data "
                       "dir is a folder you can write to, or set data_dir (CAFBOT_DATA_DIR) to one.")


def _tighten(path: Path, mode: int) -> None:
    try:
        if stat.S_IMODE(path.stat().st_mode) != mode:
            path.chmod(mode)
    except PermissionError:  # not ours (a shared folder, say): say so, and carry on
        log.warning("cannot make %s private (mode %o): it belongs to another user", path, mode)
