"""Bulkheads: one in-flight call per provider and operation, run on a dedicated worker thread.

Python cannot kill a thread, so a provider stuck in a blocking call keeps its thread forever.
The router therefore never waits for a provider longer than the call's deadline: the caller
hands the call to the provider's worker and waits with a timeout.  The slot is released only
when the provider call really returns, so while a provider is stuck every later call to it
fails fast (``bulkhead_busy``) instead of piling up more stuck threads behind it.
"""

from __future__ import annotations

import threading
from _queue import SimpleQueue  # what queue.SimpleQueue is, without queue's import (heapq, Queue)
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Call", "Lane", "LaneBusy"]

T = TypeVar("T")


class LaneBusy(Exception):
    """The lane's slot stayed taken until the caller's deadline."""


class Call(Generic[T]):
    """One submitted provider call; :meth:`wait` returns its value or raises its error.

    :param notify: set (never cleared) when the call finishes, so a caller waiting for the
        first of several calls can sleep on one event.
    """

    def __init__(self, fn: Callable[[], T], notify: threading.Event | None = None) -> None:
        self._fn = fn
        self._notify = notify
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        """Run the function, keeping its value or error for :meth:`wait` (signalled by :meth:`signal`)."""
        try:
            self._value = self._fn()
        except BaseException as exc:  # handed to the waiting caller, never lost
            self._error = exc

    def signal(self) -> None:
        """Tell waiters the call is done."""
        self._done.set()
        if self._notify is not None:
            self._notify.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None) -> T:
        """Wait up to ``timeout`` seconds (``None`` = forever); raise ``TimeoutError`` if still running."""
        if not self._done.wait(None if timeout is None else max(0.0, timeout)):
            raise TimeoutError
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set by run() when no error was raised


class Lane:
    """A capacity-1 bulkhead with its own daemon worker thread."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._slot = threading.Lock()
        self._jobs: SimpleQueue[Call[object] | None] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    @property
    def busy(self) -> bool:
        """True while a call holds the slot."""
        return self._slot.locked()

    def submit(self, fn: Callable[[], T], wait: float | None, notify: threading.Event | None = None) -> Call[T]:
        """Take the slot (waiting at most ``wait`` seconds, ``None`` = forever) and start ``fn`` on the worker.

        Raises :class:`LaneBusy` when the slot stays taken, ``RuntimeError`` after :meth:`close`.
        """
        if self._closed:
            raise RuntimeError(f"{self.name}: router is closed")
        taken = self._slot.acquire() if wait is None else self._slot.acquire(timeout=max(0.0, wait))
        if not taken:
            raise LaneBusy(self.name)
        call: Call[T] = Call(fn, notify)
        try:
            self._ensure_worker()
            self._jobs.put(call)  # type: ignore[arg-type]  # the worker only runs and signals it
        except BaseException:
            self._slot.release()
            raise
        return call

    def _ensure_worker(self) -> None:
        with self._start_lock:
            if self._thread is None:
                thread = threading.Thread(target=self._work, name=f"paxm-{self.name}", daemon=True)
                thread.start()
                self._thread = thread

    def _work(self) -> None:
        while True:
            call = self._jobs.get()
            if call is None:
                return
            call.run()
            # Release before signalling: a caller that saw the result may call again at once.
            self._slot.release()
            call.signal()

    def close(self, timeout: float = 0.5) -> None:
        """Stop the worker; a worker stuck in a provider call is left behind (it is a daemon)."""
        self._closed = True
        thread = self._thread
        if thread is None:
            return
        self._jobs.put(None)
        if not self.busy:  # a busy worker is stuck in a provider: do not make the process wait on it
            thread.join(timeout)
