"""One writer at a time on the backfill queue, across the run and its delivery process.

The run's process appends to the backfill queue while its delivery process claims and
completes episodes in the same file.  When two SQLite connections want the write lock at
once, the loser does not wait for the lock to be released: SQLite's busy handler sleeps
1, 2, 5, 10 ... 100 ms and tries again, so a lock held for 40 ms can cost the other side
100 ms or more.  Measured with ``strace`` (10,000 turns), the two processes slept about
5 seconds that way.

Both processes therefore take an advisory ``flock`` on ``queue.sqlite.lock`` around every
write transaction they start on the backfill queue.  A process waiting for a ``flock`` is
woken by the kernel the moment it is released, so the SQLite lock is always free when a
transaction begins.  Nothing durable depends on the lock: it only orders transactions that
SQLite would serialise anyway, and the kernel drops it when its holder dies (kill -9
included).  Where ``fcntl`` is missing the lock is a no-op and SQLite's busy handler
serialises the writers as before.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["QueueWriteLock", "SerializedQueue"]


class QueueWriteLock:
    """An exclusive lock shared by every process that writes one backfill queue.

    ``flock`` locks belong to an open file description, so two threads of one process would
    both "hold" it at once; a thread lock in front of it keeps one holder per process.
    """

    def __init__(self, queue_path: str | os.PathLike[str]) -> None:
        self.path = Path(f"{os.fspath(queue_path)}.lock")
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:  # not POSIX: SQLite's busy handler serialises the writers
            self._flock: Callable[[int, int], Any] | None = None
            return
        self._flock = fcntl.flock
        self._exclusive, self._unlock = fcntl.LOCK_EX, fcntl.LOCK_UN
        from paxm_core.private_files import open_private

        self._fd = open_private(self.path, os.O_RDWR)  # 0600 when new, never through a link

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the body (blocks until the other process releases it)."""
        with self._thread_lock:
            if self._flock is None or self._fd is None:
                yield
                return
            self._flock(self._fd, self._exclusive)
            try:
                yield
            finally:
                self._flock(self._fd, self._unlock)

    def close(self) -> None:
        """Close the lock file (releases the lock if held)."""
        with self._thread_lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class SerializedQueue:
    """A :class:`~paxm_core.capture.CaptureQueue` whose every method call holds ``lock``.

    Handed to the delivery loop in place of the queue, so its claims, completions, failures
    and releases (from the loop and from its claim-ahead thread) never meet the run's append
    in SQLite's busy handler.  Attributes that are not methods are passed through.
    """

    def __init__(self, queue: Any, lock: QueueWriteLock) -> None:
        self._queue = queue
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._queue, name)
        if name.startswith("_") or not callable(attr):
            return attr
        lock = self._lock

        def locked(*args: Any, **kwargs: Any) -> Any:
            with lock.held():
                return attr(*args, **kwargs)

        return locked
