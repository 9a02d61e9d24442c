"""Capture-queue schema and the raw inbox, in plain stdlib.

This file is the contract between the hook client and the capture queue.  The hook client
(``paxm_core/passive/client.py``) loads it *by path* when the hook daemon is down, so it must
import only C-level stdlib modules (``sqlite3``, ``json``, ``hashlib``, ``os``, ``time``) and
never a paxm module: a hook runs on every prompt and must start fast and fail open.

The client stores the raw hook payload with :func:`append_raw`; the daemon later turns inbox
rows into capture events with ``CaptureQueue.drain_inbox`` (one transaction per entry; an
entry that cannot be processed stays in the inbox, marked ``failed`` with its error).

Timestamps are fixed-width UTC text (``2026-01-02T03:04:05.123456Z``) so that SQL string
comparison orders them.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time

TYPE_CHECKING = False  # not ``typing``'s: this file imports only C-level modules
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "InboxConflict",
    "UpstreamQueue",
    "add_counter",
    "append_raw",
    "raw_hash",
    "connect",
    "copies_beside",
    "each_in",
    "ensure_schema",
    "sqlite_hint",
    "sha256_hex",
    "utc_stamp",
]

BUSY_TIMEOUT_MS = 5000


class InboxConflict(ValueError):
    """``append_raw`` was given an ``event_id`` already stored with different content."""


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data`` (the checksum used for events, episodes and raw entries)."""
    return hashlib.sha256(data).hexdigest()


def raw_hash(target: str, event: str, raw: bytes) -> str:
    """The checksum of an inbox entry: its target, event name and raw payload."""
    return sha256_hex(b"%s\x00%s\x00%s" % (target.encode(), event.encode(), raw))


def utc_stamp(epoch: float | None = None) -> str:
    """Fixed-width UTC timestamp with microseconds for ``epoch`` (default: now)."""
    seconds, fraction = divmod(int(round((time.time() if epoch is None else epoch) * 1_000_000)), 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:06d}Z"


# Named, ordered migrations; each is a list of statements applied in one transaction and
# recorded in ``_paxm_migrations``.  Never edit a released migration: append a new one.
MIGRATIONS: list[tuple[str, list[str]]] = [
    (
        "m001_capture_queue",
        [
            """CREATE TABLE IF NOT EXISTS capture_events (
  event_id TEXT PRIMARY KEY,
  session_key TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  source_sequence INTEGER,
  final_sequence INTEGER,
  terminal INTEGER NOT NULL DEFAULT 0,
  payload_json TEXT NOT NULL,
  payload_hash TEXT NOT NULL,
  episode_id TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  UNIQUE(session_key, sequence)
)""",
            "CREATE INDEX IF NOT EXISTS capture_events_pending ON capture_events(session_key, episode_id, sequence)",
            "CREATE INDEX IF NOT EXISTS capture_events_open ON capture_events(episode_id, created_at)",
            """CREATE TABLE IF NOT EXISTS capture_episodes (
  episode_id TEXT PRIMARY KEY,
  session_key TEXT NOT NULL,
  first_sequence INTEGER NOT NULL,
  last_sequence INTEGER NOT NULL,
  complete INTEGER NOT NULL,
  payload_json TEXT NOT NULL,
  payload_hash TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  error TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  UNIQUE(session_key, first_sequence, last_sequence)
)""",
            "CREATE INDEX IF NOT EXISTS capture_episodes_schedule"
            " ON capture_episodes(session_key, first_sequence, episode_id)",
            """CREATE TABLE IF NOT EXISTS capture_deliveries (
  episode_id TEXT NOT NULL,
  provider TEXT NOT NULL,
  profiles_json TEXT NOT NULL DEFAULT '[]',
  state TEXT NOT NULL DEFAULT 'pending',
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT NOT NULL DEFAULT '',
  lease_owner TEXT NOT NULL DEFAULT '',
  last_error TEXT NOT NULL DEFAULT '',
  provider_ref TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT '',
  first_attempt_at TEXT NOT NULL DEFAULT '',
  last_attempt_at TEXT NOT NULL DEFAULT '',
  delivered_at TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(episode_id, provider)
)""",
            "CREATE INDEX IF NOT EXISTS capture_deliveries_schedule"
            " ON capture_deliveries(state, next_attempt_at, provider, episode_id)",
            """CREATE TABLE IF NOT EXISTS capture_inbox (
  event_id TEXT PRIMARY KEY,
  target TEXT NOT NULL,
  event TEXT NOT NULL,
  raw BLOB NOT NULL,
  raw_hash TEXT NOT NULL,
  received_at TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT ''
)""",
            "CREATE INDEX IF NOT EXISTS capture_inbox_pending ON capture_inbox(state, received_at)",
        ],
    ),
    (
        # Each delivery carries its episode's session and position, so the claim query can
        # find the head of every (provider, session) from one small partial index instead of
        # joining every undelivered row with its episode.
        "m002_delivery_heads",
        [
            "ALTER TABLE capture_deliveries ADD COLUMN session_key TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE capture_deliveries ADD COLUMN first_sequence INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE capture_deliveries ADD COLUMN episode_created_at TEXT NOT NULL DEFAULT ''",
            """UPDATE capture_deliveries SET
  session_key = (SELECT e.session_key FROM capture_episodes e WHERE e.episode_id = capture_deliveries.episode_id),
  first_sequence = (SELECT e.first_sequence FROM capture_episodes e
                    WHERE e.episode_id = capture_deliveries.episode_id),
  episode_created_at = (SELECT e.created_at FROM capture_episodes e
                        WHERE e.episode_id = capture_deliveries.episode_id)
WHERE EXISTS (SELECT 1 FROM capture_episodes e WHERE e.episode_id = capture_deliveries.episode_id)""",
            "CREATE INDEX IF NOT EXISTS capture_deliveries_heads"
            " ON capture_deliveries(provider, session_key, first_sequence)"
            " WHERE state IN ('pending', 'retry', 'delivering')",
        ],
    ),
    (
        # A provider's due deliveries in claim order, so ``claim_batch`` walks the index and
        # stops at its limit instead of sorting the whole backlog on every claim.
        "m003_delivery_due_order",
        [
            "CREATE INDEX IF NOT EXISTS capture_deliveries_due"
            " ON capture_deliveries(provider, episode_created_at, session_key, first_sequence)"
            " WHERE state IN ('pending', 'retry')",
        ],
    ),
    (
        # Index only the live states, so a lease or a completion does not move every row's
        # index entry: waiting rows by ``next_attempt_at`` and dead rows.
        "m004_live_state_indexes",
        [
            "DROP INDEX IF EXISTS capture_deliveries_schedule",
            "CREATE INDEX IF NOT EXISTS capture_deliveries_waiting"
            " ON capture_deliveries(next_attempt_at) WHERE state IN ('pending', 'retry')",
            "CREATE INDEX IF NOT EXISTS capture_deliveries_dead ON capture_deliveries(episode_id) WHERE state = 'dead'",
        ],
    ),
    (
        # Named counters of things capture did that an operator should see, e.g.
        # ``truncated_events``: oversized texts stored cut to the size limit.
        "m005_capture_counters",
        [
            """CREATE TABLE IF NOT EXISTS capture_counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL DEFAULT ''
)""",
        ],
    ),
]

SCHEMA_VERSION = len(MIGRATIONS)


def each_in(conn: sqlite3.Connection, sql: str, values: Sequence[Any], *args: Any) -> Iterator[Any]:
    """The rows of ``sql`` with its ``IN ({})`` filled by ``values``, 500 per statement (after ``args``)."""
    for start in range(0, len(values), 500):
        chunk = list(values[start : start + 500])
        yield from conn.execute(sql.format(",".join("?" * len(chunk))), [*args, *chunk])


def add_counter(conn: sqlite3.Connection, name: str, value: int, stamp: str) -> None:
    """Add ``value`` to the capture counter ``name`` (m005) in the caller's transaction."""
    conn.execute(
        "INSERT INTO capture_counters(name, value, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT(name) DO UPDATE SET value = value + excluded.value, updated_at = excluded.updated_at",
        (name, value, stamp),
    )


def _retry_locked(step: Callable[[], T], timeout: float = BUSY_TIMEOUT_MS / 1000) -> T:
    """Run idempotent ``step``, retrying a lock SQLite's busy handler does not wait for.

    :func:`paxm_core.sqlite_locks.retry_locked`, restated because this file may import no paxm module.
    """
    give_up = time.monotonic() + timeout
    pause = 0.002
    while True:
        try:
            return step()
        except Exception as exc:  # the hook client's sqlite3 stand-in has no exception classes
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() + pause > give_up:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def ensure_schema(conn: sqlite3.Connection, timeout: float = BUSY_TIMEOUT_MS / 1000) -> None:
    """Apply missing migrations (safe when several processes open the file at once).

    ``timeout`` bounds the wait for a lock (the connection's busy timeout bounds the rest).
    """
    if _retry_locked(lambda: conn.execute("PRAGMA user_version").fetchone()[0], timeout) >= SCHEMA_VERSION:
        return
    if _is_upstream_queue(conn):
        raise UpstreamQueue("the capture queue file holds upstream paxm's queue")
    _retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"), timeout)
    # BEGIN IMMEDIATE takes the write lock first, so two processes racing to create the
    # schema serialize here and the loser sees the winner's rows in _paxm_migrations.
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS _paxm_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        done = {row[0] for row in conn.execute("SELECT name FROM _paxm_migrations")}
        for name, statements in MIGRATIONS:
            if name in done:
                continue
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO _paxm_migrations(name, applied_at) VALUES (?, ?)", (name, utc_stamp()))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class UpstreamQueue(Exception):
    """The queue file is upstream paxm's capture queue (same default path, another schema)."""


def _is_upstream_queue(conn: sqlite3.Connection) -> bool:
    """Upstream's tables without paxm's migration record: paxm's migrations would half-apply to it.

    Asked only on the slow path (a schema older than this one), never on a hook's usual open.
    """
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return "capture_events" in names and "_paxm_migrations" not in names


def _aside_name(path: str, kind: str) -> str:
    """``<path>.<kind>-<UTC time>[-n]``: the first such name not taken."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target, n = f"{path}.{kind}-{stamp}", 1
    while os.path.lexists(target):
        n += 1
        target = f"{path}.{kind}-{stamp}-{n}"
    return target


def _set_aside_upstream(path: str, timeout: float) -> bool:
    """Copy upstream's queue to a new private ``<path>.upstream-<UTC time>``, then remove the original.

    The copy is paxm's own file (created 0600 here; SQLite's backup writes a consistent
    snapshot, its WAL included), so nothing upstream captured is lost and nothing readable by
    others is left behind; the daemon imports what it can deliver from it
    (:mod:`paxm_core.capture.upstream_queue`).  ``False`` when it cannot be copied (the file
    stays, and opening the queue fails as before).
    """
    target = _aside_name(path, "upstream")
    try:
        _create_private(target)
    except OSError:
        return False
    old_umask = os.umask(0o077)
    try:
        source = sqlite3.connect(path, timeout=timeout)
        copy = sqlite3.connect(target, timeout=timeout)
        try:
            source.backup(copy)
            # a rollback journal, not upstream's WAL: the kept copy is one file, no -wal/-shm beside it
            copy.execute("PRAGMA journal_mode = DELETE").fetchall()
        finally:
            copy.close()
            source.close()
    except Exception:
        try:
            os.unlink(target)
        except OSError:
            pass
        return False
    finally:
        os.umask(old_umask)
    # the WAL first: a fresh queue must never find the old one's frames beside it
    for suffix in ("-wal", "-shm", ""):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass
        except OSError:
            return False
    return True


def _private_file(path: str) -> None:
    """Create ``path`` 0600 and its missing parents 0700; refuse what is not safe to open.

    The same rules as :mod:`paxm_core.private_files` (docs/security.md), restated here because
    this file may import no paxm module (see the module docstring): modes are set only on what
    this call creates; the queue's directory, and the one new directories are created in, must
    be ones no other user can change (owned by you or root, no group/other write bit unless
    sticky); the queue and its ``-wal``/``-shm``/``-journal``, when they exist, must be regular
    files you own (a link is never followed).

    :raises OSError: naming the path and the reason, when any of that does not hold.
    """
    import stat  # already loaded by ``os``: costs nothing on the hook client path

    directory = os.path.dirname(os.path.abspath(path))
    euid = os.geteuid()
    _make_directories(directory, euid)
    _refuse_untrusted(directory, euid)
    # O_EXCL: an existing file is never opened here.  Closing any descriptor of a file drops
    # every POSIX lock this process holds on it -- including the locks of SQLite connections
    # to it (the daemon opens the queue more than once).  Without its lock a connection looks
    # absent, so another process closing the queue checkpoints and deletes the WAL this one
    # is still committing to, and those commits vanish when the process dies.  O_EXCL also
    # fails on a link, dangling or not, so none is followed.
    try:
        _create_private(path)
    except FileExistsError:
        pass
    for candidate in (path, path + "-wal", path + "-shm", path + "-journal"):
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise OSError(f"{candidate} is a symbolic link; paxm does not follow links where it keeps its files")
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{candidate} is not a regular file; paxm keeps the capture queue in a database file")
        if info.st_uid != euid:
            raise OSError(f"{candidate} is owned by uid {info.st_uid}, not by you (uid {euid})")


def _create_private(path: str) -> None:
    """Create ``path`` 0600 whatever the umask; raise if anything (a link included) is there."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def _make_directories(directory: str, euid: int) -> None:
    """Create ``directory`` and its missing parents 0700, inside one only ``euid`` or root can change."""
    missing: list[str] = []
    probe = directory
    while not os.path.isdir(probe):
        missing.append(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if missing:
        _refuse_untrusted(probe, euid)
    for new_dir in reversed(missing):
        try:
            os.mkdir(new_dir, 0o700)
        except FileExistsError:
            continue  # made by another process meanwhile: not ours to chmod
        fd = os.open(new_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, 0o700)  # the umask may have removed the owner's bits
        finally:
            os.close(fd)


def _refuse_untrusted(directory: str, euid: int) -> None:
    """Raise unless only ``euid`` or root can change ``directory`` (part of :func:`_private_file`)."""
    import stat

    info = os.stat(directory)
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid not in (euid, 0):
        raise OSError(f"{directory} is owned by uid {info.st_uid}, not by you (uid {euid}); paxm does not write there")
    if mode & 0o022 and not mode & stat.S_ISVTX:
        raise OSError(f"{directory} is writable by other users (mode {mode:04o}); paxm does not write there")


def connect(db_path: str | os.PathLike[str], *, timeout: float = BUSY_TIMEOUT_MS / 1000) -> sqlite3.Connection:
    """Open (creating with mode 0600 in a 0700 directory) the queue database, schema applied.

    The connection is in autocommit mode (``isolation_level=None``); callers open their own
    transactions with ``BEGIN IMMEDIATE``.  ``synchronous = NORMAL`` (WAL: commits survive a
    process crash, not power loss); acknowledged writes switch to ``FULL`` for their commit.
    """
    path = os.fspath(db_path)
    # created by us 0600 (parents 0700) so it is never world-readable, even for an instant;
    # SQLite gives the -wal/-shm the database's mode, and the umask is tightened around it too
    _private_file(path)
    old_umask = os.umask(0o077)
    try:
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    finally:
        os.umask(old_umask)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        conn.execute("PRAGMA synchronous = NORMAL")
        ensure_schema(conn, timeout)
    except BaseException as exc:
        conn.close()
        # The hook client's sqlite3 stand-in has no exception classes: match on the message.
        if any(text in str(exc) for text in _CORRUPT) and _move_aside(path):
            # Self-heal: the corrupt file is kept (timestamped) and a fresh queue takes over,
            # so capture resumes instead of losing every later event.
            return connect(path, timeout=timeout)
        if isinstance(exc, UpstreamQueue) and _set_aside_upstream(path, timeout):
            return connect(path, timeout=timeout)  # a fresh queue; the daemon imports the copy
        raise
    return conn


_CORRUPT = ("file is not a database", "database disk image is malformed")


def copies_beside(db_path: str | os.PathLike[str], kind: str) -> list[str]:
    """Files set aside next to ``db_path`` as ``<name>.<kind>-<UTC time>…`` (corrupt, upstream), oldest first."""
    directory, name = os.path.split(os.path.abspath(os.fspath(db_path)))
    try:
        entries = os.listdir(directory)
    except OSError:
        return []
    prefix = f"{name}.{kind}-"
    return sorted(
        os.path.join(directory, e)
        for e in entries
        if e.startswith(prefix) and not e.endswith(("-wal", "-shm", "-journal"))
    )


def _move_aside(path: str) -> bool:
    """Rename a corrupt queue (and its -wal/-shm) to ``<path>.corrupt-<UTC time>``; ``False`` if impossible."""
    target = _aside_name(path, "corrupt")
    try:
        os.rename(path, target)
    except OSError:
        return False
    for suffix in ("-wal", "-shm"):
        try:
            os.rename(path + suffix, target + suffix)
        except OSError:
            pass
    return True


def sqlite_hint(message: str) -> str:
    """A fix that fits an SQLite error message (never "check permissions" for a corrupt file)."""
    text = message.lower()
    if any(c in text for c in _CORRUPT):
        return (
            "the file is corrupt or not an SQLite database; move it aside (paxm keeps a timestamped copy) or restore it"
        )
    if "readonly" in text or "read-only" in text or "permission" in text or "access" in text:
        return "check the file and directory permissions (the directory must be writable for -wal/-shm)"
    if "unable to open" in text:
        return "check that the directory exists and is writable"
    if "full" in text:
        return "the disk is full; free some space"
    if "locked" in text or "busy" in text:
        return "another process holds the database; retry, or stop it"
    return "see the SQLite error above"


def append_raw(
    db_path: str | os.PathLike[str],
    event_id: str,
    target: str,
    event: str,
    raw: bytes | str,
    received_at: float | None = None,
    *,
    timeout: float = BUSY_TIMEOUT_MS / 1000,
) -> bool:
    """Durably store one raw hook payload; return ``True`` if new, ``False`` if a duplicate.

    Returns only after COMMIT, so the hook may acknowledge.  Re-sending the same
    ``event_id`` with identical target/event/raw bytes is an idempotent duplicate (also when
    the entry was already drained into the queue); different content raises
    :class:`InboxConflict`.  Drained entries keep their hash (state ``done``, raw bytes
    cleared) so replays stay recognisable.  The payload is stored as given, even if it is not valid JSON:
    the daemon reports it instead of the hook dropping it.

    :param db_path: the capture queue file (``<configdir>/hooks/capture.sqlite`` by default).
    :param event_id: the client-assigned id (``evt_<32 hex>``).
    :param target: harness name (``codex``, ``claude``...).
    :param event: hook event name (``user_input``, ``turn_end``...).
    :param raw: the hook's stdin payload.
    :param received_at: capture time as epoch seconds (default: now).
    """
    if not isinstance(event_id, str) or not event_id.strip():
        raise ValueError("capture inbox event_id is required")
    data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    digest = raw_hash(target, event, data)
    conn = connect(db_path, timeout=timeout)
    try:
        # the hook acknowledges after this commit: fsync it so not even power loss drops it
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT raw_hash FROM capture_inbox WHERE event_id = ?", (event_id,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO capture_inbox(event_id, target, event, raw, raw_hash, received_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (event_id, target, event, data, digest, utc_stamp(received_at)),
                )
                conn.execute("COMMIT")
                return True
            conn.execute("ROLLBACK")
            if row[0] != digest:
                raise InboxConflict(f"capture event {event_id} conflicts with an existing event")
            return False
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
