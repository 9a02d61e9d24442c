"""Create paxm's files 0600 and directories 0700 whatever the process umask.

Every file paxm writes (memory and queue databases with their ``-wal``/``-shm``, the session
sequence store, telemetry, config, the hook daemon's socket, lock and log) goes through these
helpers.  ``mkdir(mode=…)`` alone is not enough: the umask can only remove bits, and missing
parents are created with the default mode, so each directory paxm creates is chmod-ed after
creation.  Directories that already existed and are not paxm's (``~/.config``) are left alone.

Only :mod:`os` is imported: the hook client path uses this module.
"""

from __future__ import annotations

import _thread  # built in, unlike threading: the hook client path imports this module
import os
from typing import Any

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "connect_private",
    "private_dir",
    "private_file",
    "private_umask",
    "private_sqlite_files",
    "sqlite_hint",
]

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: str | os.PathLike[str]) -> str:
    """Create ``path`` and any missing parents, each 0700; an existing leaf is made 0700 too.

    Returns the path as a string.  Errors other than "exists" propagate.
    """
    target = os.path.abspath(os.fspath(path))
    missing: list[str] = []
    probe = target
    while not os.path.isdir(probe):
        missing.append(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise
        _chmod(directory, DIR_MODE)
    if not missing:
        _chmod(target, DIR_MODE)
    return target


def private_file(path: str | os.PathLike[str]) -> str:
    """Create ``path`` (empty, 0600, parents 0700) if missing, and make it 0600 if it exists."""
    target = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(parent):
        private_dir(parent)
    # O_EXCL: never open (and close) a file that exists.  Closing any descriptor of a file
    # drops every POSIX lock this process holds on it, and SQLite keeps its locks that way:
    # a database already open here would silently lose its locks, and another process could
    # then checkpoint and delete the WAL this process is still writing to (commits lost).
    try:
        os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE))
    except FileExistsError:
        pass
    _chmod(target, FILE_MODE)
    return target


class private_umask:  # noqa: N801 - used like a function: ``with private_umask():``
    """Run the block with umask 077, so anything created inside (SQLite's ``-wal``/``-shm``,
    a socket) is private; the previous umask is restored after.

    The umask is per process: other threads creating files meanwhile only get stricter modes.
    Blocks may overlap across threads: the first to enter saves the umask and the last to
    leave restores it (each restoring its own saved value let 077 stick when two overlapped).
    """

    def __enter__(self) -> None:
        global _private_depth, _saved_umask
        with _umask_lock:
            if _private_depth == 0:
                _saved_umask = os.umask(0o077)
            _private_depth += 1

    def __exit__(self, *exc: object) -> None:
        global _private_depth
        with _umask_lock:
            _private_depth -= 1
            if _private_depth == 0:
                os.umask(_saved_umask)


_umask_lock = _thread.allocate_lock()
_private_depth = 0  # private_umask blocks open now, in any thread
_saved_umask = 0


def private_sqlite_files(path: str | os.PathLike[str]) -> None:
    """Make an SQLite database and its ``-wal``/``-shm``/``-journal`` siblings 0600 where they exist."""
    base = os.fspath(path)
    for suffix in ("", "-wal", "-shm", "-journal"):
        candidate = base + suffix
        if os.path.exists(candidate):
            _chmod(candidate, FILE_MODE)


def _chmod(path: str, mode: int) -> None:
    try:
        if os.stat(path).st_mode & 0o777 != mode:
            os.chmod(path, mode)
    except PermissionError:
        pass  # not ours (a shared directory): leave it


def connect_private(path: str | os.PathLike[str], **kwargs: Any) -> Any:
    """``sqlite3.connect`` with the database created 0600 (parents 0700) and umask 077 around it."""
    import sqlite3

    private_file(path)
    with private_umask():
        conn = sqlite3.connect(os.fspath(path), **kwargs)
    return conn


def sqlite_hint(message: str) -> str:
    """A fix that fits an SQLite error message (corrupt, permissions, full disk, locked).

    The rule lives beside the hook client's inbox code, which may import nothing of paxm's; this
    public name loads it only when an error is being explained.
    """
    from paxm_core.capture._inbox import sqlite_hint as rule

    return rule(message)
