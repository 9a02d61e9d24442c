"""The provider's single SQLite connection: opening, pragmas, and deadline interruption."""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from paxm_core import Deadline, DeadlineExceeded, ProviderError
from paxm_core.private_files import UnsafePathError, connect_private, private_umask, sqlite_hint
from paxm_core.sqlite_locks import BUSY_TIMEOUT, retry_locked

__all__ = ["Database", "immediate"]

# VM instructions between deadline checks: frequent enough to stop a runaway FTS query within
# a fraction of a millisecond, rare enough that the callback costs nothing measurable.
_PROGRESS_STEPS = 1000
#: SQLite's wait for another connection's write lock, at most (milliseconds).
_BUSY_MS = int(BUSY_TIMEOUT * 1000)


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction: committed when the body ends, rolled back when it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # an interrupted statement may have rolled it back already
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


#: Page size of a new database file (existing files keep theirs).
_PAGE_SIZE = 8192


class Database:
    """One persistent connection shared by every thread of a provider, serialized by a lock.

    SQLite connections are not safe for concurrent use, and upstream also keeps exactly one
    open connection per provider; reopening per operation would redo pragmas and migrations.
    """

    def __init__(self, provider: str, path: Path) -> None:
        self._provider = provider
        self.path = path
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._busy_ms = _BUSY_MS

    def _open(self) -> sqlite3.Connection:
        from paxm_provider_sqlite.migrations import migrate

        try:
            # created 0600 before SQLite opens it (parents 0700): its -wal/-shm inherit the mode;
            # a link, directory, FIFO or device at the path is refused, never opened
            conn: sqlite3.Connection = connect_private(
                self.path, timeout=5.0, isolation_level=None, check_same_thread=False
            )
        except UnsafePathError as exc:
            raise ProviderError(self._provider, "open", f"providers.{self._provider}.path: {exc}") from exc
        except (OSError, sqlite3.Error) as exc:
            raise ProviderError(self._provider, "open", f"cannot open {self.path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            # Takes effect only while the file is still empty (before WAL mode writes it): a
            # memory row with its analysed terms is 0.5-2 KB, and 4 KiB pages leave up to a
            # fifth of each page unused (-16% on disk for 700-char turns, measured).
            conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
            mode = retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
            if mode is None or str(mode[0]).lower() != "wal":
                raise ProviderError(self._provider, "open", f"{self.path}: cannot enable WAL journal mode")
            conn.execute("PRAGMA synchronous = NORMAL")
            with private_umask():
                retry_locked(lambda: migrate(conn))
        except sqlite3.Error as exc:
            conn.close()
            raise ProviderError(self._provider, "open", f"{self.path}: {exc}; {sqlite_hint(str(exc))}") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def session(self, op: str, deadline: Deadline) -> Iterator[sqlite3.Connection]:
        """Yield the connection under the lock, interrupting SQLite once ``deadline`` passes.

        SQLite errors become :class:`ProviderError`; an interrupted statement becomes
        :class:`DeadlineExceeded`.
        """
        deadline.check(f"{self._provider} {op}")
        # The wait for another thread's statement is bounded by the deadline too: the provider
        # declares ``deadline_bound``, so the router may run this call on the caller's thread.
        remaining = deadline.remaining()
        bounded = math.isfinite(remaining)
        if not self._lock.acquire(timeout=remaining if bounded else -1):
            raise DeadlineExceeded(f"{self._provider} {op}: deadline exceeded", cancelled=deadline.cancelled)
        try:  # the lock is held (acquired with a timeout): released however the body ends
            if self._closed:
                raise ProviderError(self._provider, op, "sqlite provider is closed")
            if self._conn is None:
                self._conn = self._open()
                self._busy_ms = _BUSY_MS
            # The lock may have been contended: re-check before doing any work.
            deadline.check(f"{self._provider} {op}")
            conn = self._conn
            # SQLite's own wait for another process's write lock (busy_timeout) ends with the
            # deadline as well; 5 s stays the ceiling.
            busy_ms = max(1, min(_BUSY_MS, int(deadline.remaining() * 1000))) if bounded else _BUSY_MS
            if busy_ms != self._busy_ms:
                conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
                self._busy_ms = busy_ms
            limited = deadline.at is not None
            if limited:
                conn.set_progress_handler(lambda: 1 if deadline.expired() else 0, _PROGRESS_STEPS)
            else:
                # An unlimited deadline can still be cancelled.
                conn.set_progress_handler(lambda: 1 if deadline.cancelled else 0, _PROGRESS_STEPS * 10)
            try:
                yield conn
            except BaseException as exc:
                if conn.in_transaction:
                    conn.rollback()
                if not isinstance(exc, sqlite3.Error):
                    raise
                operational = isinstance(exc, sqlite3.OperationalError)
                if operational and ("interrupted" in str(exc) or deadline.expired()):
                    raise DeadlineExceeded(
                        f"{self._provider} {op}: deadline exceeded", cancelled=deadline.cancelled
                    ) from exc
                raise ProviderError(
                    self._provider, op, str(exc), retryable=operational and "locked" in str(exc)
                ) from exc
            finally:
                conn.set_progress_handler(None, 0)
        finally:
            self._lock.release()

    def close(self) -> None:
        """Close the connection; later sessions fail with a clear error."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None
