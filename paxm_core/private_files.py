"""Create paxm's files 0600 and directories 0700, and touch nothing that is not paxm's.

Every file paxm writes (memory and queue databases with their ``-wal``/``-shm``, the session
sequence store, the backfill checkpoint, telemetry, config, the hook daemon's lock and log)
goes through these helpers.  The rules, in full (docs/security.md, "Files paxm creates"):

* **Modes only on what paxm creates.**  A file is created with ``O_CREAT | O_EXCL`` and a
  directory with ``mkdir``; only then is its mode set (0600 / 0700, through the new
  descriptor, so the umask cannot leave it unusable or wider).  An existing file or directory
  is never chmod-ed: it may not be paxm's (``path: /dev/null``).  A paxm file whose mode was
  widened later is a ``paxm config doctor`` finding with the ``chmod`` that fixes it.
* **No links followed.**  The last component of a path paxm creates, truncates or appends to
  is opened with ``O_NOFOLLOW``; an existing entry must be a regular file owned by the
  current user, so a symbolic link, a directory, a FIFO, a socket or a device is refused
  (:class:`UnsafePathError`) before anything opens it.
* **Only directories no other user can change.**  paxm writes only in a directory owned by
  the current user or root whose group/other write bits are off (or that is sticky, like
  ``/tmp``): whoever can write a directory can swap what paxm opens in it.

Only :mod:`os` and :mod:`stat` are imported: the hook client path uses this module.
"""

from __future__ import annotations

import _thread  # built in, unlike threading: the hook client path imports this module
import os
import stat
from typing import Any

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "UnsafePathError",
    "connect_private",
    "open_private",
    "private_database",
    "private_dir",
    "private_file",
    "private_umask",
    "sqlite_hint",
    "untrusted_dir_reason",
    "unsafe_file_reason",
]

FILE_MODE = 0o600
DIR_MODE = 0o700

#: the files SQLite keeps beside a database, created by SQLite itself
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


class UnsafePathError(OSError):
    """paxm refused to write at a path: a link, not a regular file, not the user's, or in a
    directory another user can change.

    Raised by :func:`private_dir`, :func:`private_file`, :func:`open_private` and
    :func:`connect_private`; the message names the path and why.  An :class:`OSError`, so
    every caller that reports a failed open reports this refusal the same way.
    """


def untrusted_dir_reason(path: str | os.PathLike[str]) -> str | None:
    """Why another user could change the directory ``path``; ``None`` when only you or root can.

    A directory is trusted when it is owned by the current user or by root and no group or
    other write bit is set, unless it is sticky (``/tmp``: others may add entries but not
    rename or remove paxm's).  A symlinked directory is judged by what it points at.
    """
    euid = os.geteuid()
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid not in (euid, 0):
        return f"is owned by uid {info.st_uid}, not by you (uid {euid})"
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o022 and not mode & stat.S_ISVTX:
        return f"is writable by other users (mode {mode:04o})"
    return None


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def unsafe_file_reason(info: os.stat_result, what: str = "file") -> str | None:
    """Why paxm must not write an existing entry (from ``os.lstat``); ``None`` for a regular file you own."""
    if not stat.S_ISREG(info.st_mode):
        kind = _kind(info.st_mode)
        if stat.S_ISLNK(info.st_mode):
            return f"is {kind}; paxm does not follow links where it keeps its files"
        return f"is {kind}, not a {what}"
    euid = os.geteuid()
    if info.st_uid != euid:
        return f"is owned by uid {info.st_uid}, not by you (uid {euid})"
    return None


def _refuse_unless_private(path: str, what: str) -> None:
    """Raise :class:`UnsafePathError` unless the existing ``path`` is a regular file you own."""
    reason = unsafe_file_reason(os.lstat(path), what)
    if reason:
        raise UnsafePathError(f"{path} {reason}")


def _chmod_new_dir(directory: str) -> None:
    # mkdir's mode is masked by the umask (077 could leave 0500: unusable); the directory was
    # created by this call, so set its mode through a descriptor that cannot follow a link
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except PermissionError:  # a umask of 0777 left it 0000, unreadable: by name, in a checked parent
        os.chmod(directory, DIR_MODE)
        return
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != DIR_MODE:
            os.fchmod(fd, DIR_MODE)
    finally:
        os.close(fd)


def private_dir(path: str | os.PathLike[str]) -> str:
    """Create ``path`` and any missing parents, each 0700; return the path as a string.

    Only the directories this call creates get a mode; an existing one keeps its own.  The
    directory, and the existing directory new ones are created in, must be ones no other user
    can change (:func:`untrusted_dir_reason`): nothing is created in one that fails.

    :raises UnsafePathError: another user can change the directory.
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
    if missing:  # whoever can write where a new directory goes can rename it and put theirs there
        _refuse_untrusted(probe)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise
            continue  # another process made it meanwhile: not ours to chmod
        _chmod_new_dir(directory)
    _refuse_untrusted(target)
    return target


def _refuse_untrusted(directory: str) -> None:
    reason = untrusted_dir_reason(directory)
    if reason:
        raise UnsafePathError(f"{directory} {reason}; paxm writes only in directories no other user can change")


def private_file(path: str | os.PathLike[str], what: str = "file") -> str:
    """Create ``path`` empty and 0600 (parents 0700) if missing; return it as a string.

    An existing ``path`` is left exactly as it is, and must be a regular file owned by the
    current user: a link, directory, FIFO, socket or device raises.

    :param what: what the file is, for the error (``database file``).
    :raises UnsafePathError: the path or its directory is not safe to write (see the module).
    """
    target = os.fspath(path)
    private_dir(os.path.dirname(os.path.abspath(target)))
    # O_EXCL: never open (and close) a file that exists.  Closing any descriptor of a file
    # drops every POSIX lock this process holds on it, and SQLite keeps its locks that way:
    # a database already open here would silently lose its locks, and another process could
    # then checkpoint and delete the WAL this process is still writing to (commits lost).
    # O_EXCL also fails on any existing link, dangling or not, so a link is never followed.
    try:
        fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        _refuse_unless_private(target, what)
        return target
    try:
        os.fchmod(fd, FILE_MODE)  # created just now: the umask may have removed the owner's bits
    finally:
        os.close(fd)
    return target


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """Open ``path`` with ``flags`` (``O_RDWR``, ``O_WRONLY | O_APPEND`` ...) and return the descriptor.

    The file is created 0600 (parents 0700) when missing.  It is never opened through a link
    (``O_NOFOLLOW``), and an existing entry that is not a regular file owned by the current
    user is refused before it is opened (a FIFO would block, a device would be written to),
    then checked again on the descriptor.  The descriptor is close-on-exec and blocking.

    :raises UnsafePathError: the path or its directory is not safe to write.
    """
    target = os.fspath(path)
    private_dir(os.path.dirname(os.path.abspath(target)))
    # O_NONBLOCK while opening: a FIFO swapped in after the check must not hang the open
    # (regular files ignore it); it is cleared once the descriptor is known to be a file.
    base = flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC) | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    for _ in range(3):  # the file may be removed (rotated) between the two opens
        try:
            fd = os.open(target, base | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            _refuse_unless_private(target, "file")
            try:
                fd = os.open(target, base)
            except FileNotFoundError:
                continue
            created = False
        else:
            created = True
        try:
            reason = unsafe_file_reason(os.fstat(fd))
            if reason:
                raise UnsafePathError(f"{target} {reason}")
            if created:
                os.fchmod(fd, FILE_MODE)
            if flags & os.O_TRUNC:
                os.ftruncate(fd, 0)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd
    raise FileNotFoundError(f"{target} keeps disappearing while it is opened")


def private_database(path: str | os.PathLike[str], what: str = "database file") -> str:
    """:func:`private_file` for an SQLite database, plus the same check on its ``-wal``/``-shm``/``-journal``.

    SQLite opens those siblings itself: each one that exists must be a regular file owned by
    the current user (SQLite would write into a planted one).  New ones are 0600 because
    SQLite gives them the database's mode, and :func:`connect_private` runs with umask 077.

    :raises UnsafePathError: the database, a sibling or the directory is not safe to write.
    """
    target = private_file(path, what)
    for suffix in SQLITE_SIDECARS:
        sidecar = target + suffix
        try:
            _refuse_unless_private(sidecar, what)
        except FileNotFoundError:
            pass
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


def connect_private(path: str | os.PathLike[str], *, what: str = "database file", **kwargs: Any) -> Any:
    """``sqlite3.connect`` on a database checked and created by :func:`private_database`, under umask 077.

    :param what: what the database is, for the error.
    :raises UnsafePathError: the path is not safe to open (see :func:`private_database`).
    """
    import sqlite3

    target = private_database(path, what)
    with private_umask():
        conn = sqlite3.connect(target, **kwargs)
    return conn


def sqlite_hint(message: str) -> str:
    """A fix that fits an SQLite error message (corrupt, permissions, full disk, locked).

    The rule lives beside the hook client's inbox code, which may import nothing of paxm's; this
    public name loads it only when an error is being explained.
    """
    from paxm_core.capture._inbox import sqlite_hint as rule

    return rule(message)
