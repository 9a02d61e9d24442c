"""Persistent per-session sequence numbers, monotonic across processes.

Every CLI or hook process writes with its own router, so an in-memory counter could hand two
processes the same sequence within one clock tick.  The allocator keeps the last sequence of
each session in a small SQLite file (``<telemetry dir>/session-sequences.sqlite``) and
reserves the next ones in one ``BEGIN IMMEDIATE`` transaction, which SQLite serializes across
processes: the result is ``max(floor, last + 1)``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from paxm_core.api.errors import PaxmError

__all__ = ["MemorySequenceAllocator", "SequenceAllocator", "SessionSequenceStore"]

_SCHEMA = "CREATE TABLE IF NOT EXISTS session_sequences (session_id TEXT PRIMARY KEY, last_sequence INTEGER NOT NULL)"


def _prepare(conn: sqlite3.Connection) -> None:
    """Set WAL and create the table, waiting out another process doing the same."""
    from paxm_core.sqlite_locks import BUSY_TIMEOUT, retry_locked

    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
    retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"))
    retry_locked(lambda: conn.execute(_SCHEMA))


class SequenceAllocator(Protocol):
    """What the router needs from an allocator."""

    def next(self, session_id: str, floor: int) -> int:
        """Reserve and return the next sequence of ``session_id`` (at least ``floor``)."""
        return self.next_many([(session_id, floor)])[0]

    def next_many(self, requests: Sequence[tuple[str, int]]) -> list[int]:
        """Reserve the next sequence of each ``(session_id, floor)`` in order: ``max(floor, last + 1)``.

        An allocator that persists does it in one transaction; on error none is reserved.
        """
        ...

    def close(self) -> None:
        """Release resources; later reservations fail."""
        ...


class MemorySequenceAllocator(SequenceAllocator):
    """Per-process fallback: monotonic within one router only."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}
        self._lock = threading.Lock()

    def next_many(self, requests: Sequence[tuple[str, int]]) -> list[int]:
        """See :meth:`SequenceAllocator.next_many`."""
        with self._lock:
            out = []
            for session_id, floor in requests:
                value = max(floor, 1, self._last.get(session_id, 0) + 1)
                self._last[session_id] = value
                out.append(value)
            return out

    def close(self) -> None:
        """Nothing to release."""


class SessionSequenceStore(SequenceAllocator):
    """The SQLite-backed allocator; one connection, safe to share between threads, opened on the first
    allocation (``lazy=False``: at once), so recall-only processes never touch it."""

    def __init__(self, path: str | Path, *, lazy: bool = True) -> None:
        self.path = Path(path).expanduser()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._lock = threading.Lock()
        if not lazy:
            with self._lock:
                self._open()

    def _open(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        try:
            from paxm_core.private_files import connect_private, private_umask

            # created 0600 before SQLite opens it (so -wal/-shm are 0600), never through a link;
            # isolation_level=None: no implicit BEGIN, next_many holds its own transaction
            conn: sqlite3.Connection = connect_private(
                self.path, timeout=5.0, isolation_level=None, check_same_thread=False
            )
            try:
                with private_umask():
                    _prepare(conn)
            except sqlite3.Error:
                conn.close()
                raise
        except (OSError, sqlite3.Error) as exc:
            raise PaxmError(f"cannot open session sequence store {self.path}: {exc}") from exc
        self._conn = conn
        return conn

    def next_many(self, requests: Sequence[tuple[str, int]]) -> list[int]:
        """Reserve the next sequence for each ``(session_id, floor)``, in order, in one transaction.

        ``BEGIN IMMEDIATE`` takes the write lock before the read, so no other process allocates between them.
        """
        wanted = [(session_id.strip(), max(1, floor)) for session_id, floor in requests]
        if any(not session_id for session_id, _ in wanted):
            raise PaxmError("session sequence: session id is required")
        if not wanted:
            return []
        with self._lock:
            if self._closed:
                raise PaxmError("session sequence store is closed")
            conn = self._open()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    sessions = list(dict.fromkeys(session_id for session_id, _ in wanted))
                    last: dict[str, int] = {}
                    for start in range(0, len(sessions), 500):
                        chunk = sessions[start : start + 500]
                        last.update(
                            conn.execute(
                                "SELECT session_id, last_sequence FROM session_sequences"
                                f" WHERE session_id IN ({','.join('?' * len(chunk))})",
                                chunk,
                            ).fetchall()
                        )
                    out = []
                    for session_id, floor in wanted:
                        value = max(floor, last.get(session_id, 0) + 1)
                        last[session_id] = value
                        out.append(value)
                    conn.executemany(
                        "INSERT INTO session_sequences(session_id, last_sequence) VALUES (?, ?)"
                        " ON CONFLICT(session_id) DO UPDATE SET last_sequence = excluded.last_sequence",
                        [(session_id, last[session_id]) for session_id in sessions],
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise PaxmError(f"reserve session sequences: {exc}") from exc
        return out

    def close(self) -> None:
        """Close the connection; later allocations fail."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None
