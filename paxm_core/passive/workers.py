"""A small thread pool for the hook daemon: the connections it serves and the recalls it bounds.

``concurrent.futures`` would do, but importing it loads ``logging`` (and with it
``traceback``, ``string``, ``textwrap``): about 5 ms CPU that a daemon started by a first
prompt pays before its first answer (``benchmarks/hook_bench.py``).  The daemon needs only
this much of it: submit a call, wait for its result with a timeout, cancel it if it has not
started, and stop the threads without waiting for a call that hangs.

Threads start on demand, up to ``max_workers``, as ``ThreadPoolExecutor`` starts them, and
they are daemon threads: a call stuck in a provider that ignores its deadline never holds the
interpreter's exit (the hook daemon leaves with ``os._exit`` anyway).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Job", "JobCancelled", "WorkerPool"]

_PENDING, _RUNNING, _FINISHED, _CANCELLED = range(4)


class JobCancelled(Exception):
    """The job was cancelled before a worker started it (its result will never exist)."""


class Job:
    """One submitted call: its state, and its result or exception once it has run."""

    __slots__ = ("_args", "_done", "_error", "_fn", "_kwargs", "_lock", "_result", "_state")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._state = _PENDING
        self._result: Any = None
        self._error: BaseException | None = None

    def cancel(self) -> bool:
        """Cancel the job if no worker has started it; whether it is (now) cancelled."""
        with self._lock:
            if self._state == _PENDING:
                self._state = _CANCELLED
                self._fn, self._args, self._kwargs = _nothing, (), {}
                self._done.set()
            return self._state == _CANCELLED

    def cancelled(self) -> bool:
        """Whether the job was cancelled before it ran."""
        return self._state == _CANCELLED

    def done(self) -> bool:
        """Whether the job has finished or was cancelled."""
        return self._done.is_set()

    def result(self, timeout: float | None = None) -> Any:
        """The call's return value (its exception is raised here).

        :raises TimeoutError: the job did not finish within ``timeout`` seconds.
        :raises JobCancelled: the job was cancelled before it ran.
        """
        if not self._done.wait(timeout):
            raise TimeoutError(f"the job did not finish within {timeout} s")
        if self._state == _CANCELLED:
            raise JobCancelled()
        if self._error is not None:
            raise self._error
        return self._result

    def _run(self) -> None:
        with self._lock:
            if self._state != _PENDING:
                return
            self._state = _RUNNING
        try:
            self._result = self._fn(*self._args, **self._kwargs)
        except BaseException as exc:  # handed to whoever waits on result()
            self._error = exc
        finally:
            self._state = _FINISHED
            self._fn, self._args, self._kwargs = _nothing, (), {}
            self._done.set()


def _nothing() -> None:
    return None


class WorkerPool:
    """Runs submitted calls on up to ``max_workers`` daemon threads named ``<prefix>_<n>``.

    :param max_workers: the most threads it starts (a new one only when none is idle).
    :param thread_name_prefix: the threads' name prefix.
    """

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        self._max = max_workers
        self._prefix = thread_name_prefix
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Job:
        """Queue ``fn(*args, **kwargs)``; :class:`RuntimeError` once the pool is shut down."""
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new work after shutdown")
            job = Job(fn, args, kwargs)
            self._jobs.put(job)
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max:
                thread = threading.Thread(target=self._work, name=f"{self._prefix}_{len(self._threads)}", daemon=True)
                thread.start()
                self._threads.append(thread)
        return job

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                self._jobs.put(None)  # every other worker stops too
                return
            job._run()
            del job  # the result is the caller's; do not keep it alive while idle
            self._idle.release()

    def shutdown(self, *, cancel_pending: bool = True) -> None:
        """Stop taking work and let the threads end; never waits for a running call.

        :param cancel_pending: cancel the jobs no worker has started (otherwise they still run).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if cancel_pending:
                while True:
                    try:
                        job = self._jobs.get_nowait()
                    except queue.Empty:
                        break
                    if job is not None:
                        job.cancel()
            self._jobs.put(None)
