"""The capture spool: where a hook keeps an event the queue file cannot take right now.

The raw inbox (:mod:`_inbox`) lives inside the queue's SQLite file, so whatever holds that
file's write lock (a long transaction, a backup, a stuck process) also blocks the inbox.  A
hook must neither wait for the lock beyond its budget nor drop the event, so after a short,
bounded try it appends the event here instead: ``<queue file>.spool``, a plain file in the
same 0700 directory that no lock guards.

Like ``_inbox.py`` this file is loaded *by path* by the stdlib-only hook client: it imports
no paxm module.

Format: each record is one line, written with a single ``O_APPEND`` write and fsynced::

    \\n P1 <event_id> <received_at> <hex target> <hex event> <hex raw> <sha256 of the fields before it>\\n

(fields separated by one space, no leading space).  Hex keeps any payload -- even bytes that
are not UTF-8 -- on one line.  Every record starts with a newline, so a record torn by a crash
or a full disk damages only its own line; the checksum tells a torn line from a whole one, and
a torn line is skipped, never fatal.

Import (:func:`take`): the queue renames the spool to ``<spool>.taken-<ns>-<pid>`` and reads
the taken file; a writer that still had the old file open notices after its write that the path
no longer names the file it wrote to and writes the record again to the new spool.  The copy in
the taken file was either read (then the second copy is a duplicate) or not; the queue stores
events idempotently by ``event_id``, so either way the event arrives exactly once.
"""

from __future__ import annotations

import hashlib
import os
import time

__all__ = ["SpoolRecord", "append_record", "pending_count", "read_records", "spool_files", "spool_path", "take"]

MAGIC = "P1"
_TAKEN = ".taken-"
#: how often a writer follows a spool that an importer renamed under it before giving up
_ATTEMPTS = 4


#: ``(event_id, target, event, raw, received_at)`` of one spooled hook payload
SpoolRecord = tuple[str, str, str, bytes, float]


def spool_path(queue_path: str | os.PathLike[str]) -> str:
    """The spool file that belongs to the queue file ``queue_path``."""
    return os.fspath(queue_path) + ".spool"


def encode_record(event_id: str, target: str, event: str, raw: bytes, received_at: float) -> bytes:
    """One record line, leading and trailing newline included."""
    if not event_id or any(c.isspace() for c in event_id):
        raise ValueError("capture spool event_id must be a non-empty word")
    body = " ".join(
        (MAGIC, event_id, repr(float(received_at)), target.encode().hex(), event.encode().hex(), bytes(raw).hex())
    )
    digest = hashlib.sha256(body.encode("ascii")).hexdigest()
    return f"\n{body} {digest}\n".encode("ascii")


def decode_record(line: bytes) -> SpoolRecord | None:
    """The record on ``line`` (without its newlines), or ``None`` for a torn or foreign line."""
    try:
        text = line.decode("ascii")
        body, _, digest = text.rpartition(" ")
        if hashlib.sha256(body.encode("ascii")).hexdigest() != digest:
            return None
        magic, event_id, received, target, event, raw = body.split(" ")
        if magic != MAGIC:
            return None
        return (
            event_id,
            bytes.fromhex(target).decode(),
            bytes.fromhex(event).decode(),
            bytes.fromhex(raw),
            float(received),
        )
    except ValueError:  # UnicodeError is one; so is a wrong field count
        return None


def _open_own(path: str, flags: int) -> int:
    """Open ``path`` without following a symlink; refuse a file that is not this user's private one."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o170000 != 0o100000 or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise PermissionError(f"{path} is not a private regular file of this user; not using it")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _fsync_directory(path: str) -> None:
    """Make a new file's directory entry durable (a crash must not lose the file itself)."""
    fd = os.open(os.path.dirname(os.path.abspath(path)) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_record(
    queue_path: str | os.PathLike[str], event_id: str, target: str, event: str, raw: bytes, received_at: float
) -> None:
    """Durably append one event to the queue's spool (returns after fsync).

    The directory is the queue's own (0700, made by paxm); the file is created 0600.  Raises
    ``OSError`` when the record cannot be written.
    """
    path = spool_path(queue_path)
    record = encode_record(event_id, target, event, raw, received_at)
    for _ in range(_ATTEMPTS):
        fd = _open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            st = os.fstat(fd)
            # one write: on a local file system concurrent O_APPEND writes do not interleave
            written = os.write(fd, record)
            if written != len(record):
                raise OSError(f"capture spool {path}: short write ({written} of {len(record)} bytes)")
            os.fsync(fd)
        finally:
            os.close(fd)
        if st.st_size == 0:
            _fsync_directory(path)
        try:
            now = os.stat(path, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                return
        except FileNotFoundError:
            pass
        # an importer took the file while this record went in: it may not have seen it, so it
        # goes into the new spool as well (a duplicate is dropped by event_id)
    raise OSError(f"capture spool {path} kept being taken; event {event_id} not spooled")


def read_records(path: str | os.PathLike[str]) -> tuple[list[SpoolRecord], int]:
    """``(whole records in file order, number of torn lines)`` of one spool or taken file."""
    with open(_open_own(os.fspath(path), os.O_RDONLY), "rb") as file:
        data = file.read()
    records: list[SpoolRecord] = []
    torn = 0
    for line in data.split(b"\n"):
        if not line:
            continue
        record = decode_record(line)
        if record is None:
            torn += 1
        else:
            records.append(record)
    return records, torn


def spool_files(queue_path: str | os.PathLike[str]) -> list[str]:
    """Taken files (oldest first), then the live spool: every file with events still to import."""
    path = spool_path(queue_path)
    directory, name = os.path.split(os.path.abspath(path))
    try:
        entries = os.listdir(directory)
    except OSError:
        return []
    prefix = name + _TAKEN
    files = sorted(os.path.join(directory, e) for e in entries if e.startswith(prefix))
    if name in entries:
        files.append(path)
    return files


def take(queue_path: str | os.PathLike[str]) -> list[str]:
    """Rename the live spool aside and return every taken file (oldest first) to import.

    Delete a taken file only after its records are committed to the queue: a crash in
    between leaves it for the next import, which stores nothing twice.
    """
    path = spool_path(queue_path)
    try:
        os.rename(path, f"{path}{_TAKEN}{time.time_ns():020d}-{os.getpid()}")
    except FileNotFoundError:
        pass
    return [f for f in spool_files(queue_path) if f != path]


def pending_count(queue_path: str | os.PathLike[str]) -> int:
    """Whole records waiting in the spool and in taken files (what ``queue status`` shows)."""
    count = 0
    for path in spool_files(queue_path):
        try:
            count += len(read_records(path)[0])
        except OSError:
            continue
    return count
