"""Bulkheads: one in-flight call per provider and operation, run on a dedicated worker thread.

Python cannot kill a thread, so a provider stuck in a blocking call keeps its thread forever.
The router therefore never waits for a provider longer than the call's deadline: the caller
hands the call to the provider's worker and waits with a timeout.  The slot is released only
when the provider call really returns, so while a provider is stuck every later call to it
fails fast (``bulkhead_busy``) instead of piling up more stuck threads behind it.

One long-lived worker per lane (rather than a thread per call) keeps the fan-out cheap: a
recall costs a queue hand-off per provider, not a thread start.
"""

from __future__ import annotations

import _thread
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["QUICK_CALL", "QUICK_STREAK", "Batch", "Call", "Lane", "LaneBusy", "Relay", "Runner", "stall_allowance"]

T = TypeVar("T")

#: A call that returns within this many seconds and spends at least half of them on the CPU is
#: *quick*: under the interpreter lock a thread of its own buys it nothing (see :class:`Runner`).
QUICK_CALL = 0.001
#: Quick calls in a row before a lane's calls may share the runner; one call that is not quick
#: (it waited on I/O, or took longer) starts the count again.
QUICK_STREAK = 8

_thread_time = time.thread_time


class LaneBusy(Exception):
    """The lane's slot stayed taken until the caller's deadline."""


class Call(Generic[T]):
    """One submitted provider call; :meth:`wait` returns its value or raises its error."""

    __slots__ = ("_batch", "_claim", "_done", "_error", "_finished", "_fn", "_value", "started", "finished")

    def __init__(self, fn: Callable[[], T], batch: Batch | None = None) -> None:
        self._fn = fn
        self._batch = batch
        # Whoever takes this lock runs the call: the lane's worker, or the caller through
        # :meth:`Lane.claim` when the worker has not got to it yet.
        self._claim = _thread.allocate_lock()
        # A bare lock, held until the call finishes, is the cheapest "done" signal CPython
        # has: acquiring it with a timeout waits in C, where ``threading.Event`` goes through
        # a Python-level Condition and allocates a waiter lock on every wait.
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._finished = False
        self._value: T | None = None
        self._error: BaseException | None = None
        self.started = 0.0
        self.finished = 0.0

    def _run(self) -> None:
        self.started = time.monotonic()
        try:
            self._value = self._fn()
        except BaseException as exc:  # handed to the waiting caller, never lost
            self._error = exc
        self.finished = time.monotonic()

    def wait(self, timeout: float | None) -> T:
        """Wait up to ``timeout`` seconds (``None`` = forever); raise ``TimeoutError`` if still running."""
        if not self._finished:
            if not self._done.acquire(True, -1 if timeout is None else max(0.0, timeout)):
                raise TimeoutError
            self._done.release()  # let any other waiter (or a later wait) through too
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def _set_done(self) -> None:
        self._finished = True
        self._done.release()
        if self._batch is not None:
            self._batch._one_done()

    @property
    def done(self) -> bool:
        return self._finished


def _take(slot: threading.Lock, wait: float | None) -> bool:
    # ``wait`` None = as long as it takes; 0 (a fan-out's first try) = a plain non-blocking
    # acquire, cheaper than a timed one; else at most ``wait`` seconds.
    if wait is None:
        return slot.acquire()
    if wait <= 0:
        return slot.acquire(False)
    return slot.acquire(timeout=wait)


class Batch:
    """Calls a caller waits for together: one wake-up when the last of them is done.

    A caller waiting for several lanes one call after the other is woken (and has to get the
    interpreter lock back) once per call; waiting on the batch first, it is woken once.
    """

    __slots__ = ("_all", "_left", "_lock")

    def __init__(self) -> None:
        self._left = 0
        self._lock = _thread.allocate_lock()
        self._all = _thread.allocate_lock()  # held exactly while calls are outstanding

    def _expect(self) -> None:
        # Only the caller expects (and waits), one call at a time, before submitting it.
        with self._lock:
            if self._left == 0:
                self._all.acquire()
            self._left += 1

    def _one_done(self) -> None:
        with self._lock:
            self._left -= 1
            if self._left == 0:
                self._all.release()

    @property
    def done(self) -> bool:
        """True when every call expected was submitted and has finished."""
        return self._left == 0

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every call; True when all are done."""
        if self._left == 0:
            return True
        if not self._all.acquire(True, max(0.0, timeout)):
            return False
        self._all.release()
        return True


class Lane:
    """A capacity-1 bulkhead with its own daemon worker thread."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._quick = 0  # quick calls in a row (see QUICK_CALL); only ever read as a hint
        self._slot = threading.Lock()
        self._jobs: queue.SimpleQueue[Call[object] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    @property
    def busy(self) -> bool:
        """True while a call holds the slot."""
        return self._slot.locked()

    @property
    def quick(self) -> bool:
        """True when the lane's last :data:`QUICK_STREAK` calls were all quick (:data:`QUICK_CALL`)."""
        return self._quick >= QUICK_STREAK

    def _observe(self, call: Call[Any], cpu: float) -> None:
        wall = call.finished - call.started
        if wall <= QUICK_CALL and cpu + cpu >= wall:
            if self._quick < QUICK_STREAK:
                self._quick += 1
        else:
            self._quick = 0

    def not_quick(self) -> None:
        """Forget the lane's quick streak (its call on a runner did not return in time)."""
        self._quick = 0

    def run_claimed(self, call: Call[Any]) -> None:
        """Run ``call``, already claimed by this thread, then free the slot and signal it (measured)."""
        cpu = _thread_time()
        call._run()
        self._observe(call, _thread_time() - cpu)
        # Release before signalling: a caller that saw the result may call again at once.
        self._slot.release()
        call._set_done()

    def submit(self, fn: Callable[[], T], wait: float | None, batch: Batch | None = None) -> Call[T]:
        """Take the slot (waiting at most ``wait`` seconds) and start ``fn`` on the worker.

        With ``batch``, the call counts towards it (:class:`Batch`).  Raises :class:`LaneBusy`
        when the slot stays taken, ``RuntimeError`` after :meth:`close`.
        """
        if self._closed:
            raise RuntimeError(f"{self.name}: router is closed")
        acquired = _take(self._slot, wait)
        if not acquired:
            raise LaneBusy(self.name)
        call: Call[T] = Call(fn, batch)
        try:
            self._ensure_worker()
            if batch is not None:
                batch._expect()  # before the worker can finish it
            self._jobs.put(call)  # type: ignore[arg-type]
        except BaseException:
            self._slot.release()
            raise
        return call

    def reserve(self, fn: Callable[[], T], batch: Batch | None = None) -> Call[T]:
        """Take the slot if it is free and return ``fn`` as a call nobody runs yet.

        Whoever comes first runs it: the caller through :meth:`claim`, a :class:`Runner`, or
        this lane's worker once it is forwarded (:meth:`forward`).  With ``batch``, the call
        counts towards it.  Raises :class:`LaneBusy` when the slot is taken, ``RuntimeError``
        after :meth:`close`.
        """
        if self._closed:
            raise RuntimeError(f"{self.name}: router is closed")
        if not self._slot.acquire(False):
            raise LaneBusy(self.name)
        call: Call[T] = Call(fn, batch)
        if batch is not None:
            batch._expect()
        return call

    def forward(self, call: Call[T]) -> None:
        """Hand a reserved call to the worker (it runs it unless the caller claims it first)."""
        if self._closed:
            return  # the router is closing: the caller claims it or gives up at its deadline
        self._ensure_worker()
        self._jobs.put(call)  # type: ignore[arg-type]

    def run_inline(self, fn: Callable[[], T], wait: float | None, observe: bool = False) -> Call[T]:
        """Take the slot and run ``fn`` on the calling thread; the returned call is already done.

        For calls with no deadline the caller would wait for the provider anyway, so running
        it here saves a thread hand-off while keeping the bulkhead's one-call-at-a-time rule.
        ``observe`` counts the call towards the lane's quick streak (:attr:`quick`).
        """
        if self._closed:
            raise RuntimeError(f"{self.name}: router is closed")
        acquired = _take(self._slot, wait)
        if not acquired:
            raise LaneBusy(self.name)
        call: Call[T] = Call(fn)
        call._claim.acquire()
        cpu = _thread_time() if observe else 0.0
        try:
            call._run()
        finally:
            if observe:
                self._observe(call, _thread_time() - cpu)
            self._slot.release()
            call._set_done()
        return call

    def claim(self, call: Call[T]) -> bool:
        """Run ``call`` on the calling thread if the worker has not started it; True if it did.

        A caller that has nothing better to do than wait for a call its worker has not even
        picked up yet (the worker is still waiting to be scheduled, or for the interpreter
        lock the caller holds) runs it itself and saves the hand-back.  Only for calls that
        return by their deadline on their own: a claimed call cannot be abandoned.
        """
        if not call._claim.acquire(False):
            return False
        try:
            call._run()
        finally:
            self._slot.release()
            call._set_done()
        return True

    def _ensure_worker(self) -> None:
        if self._thread is not None:
            return
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
            if not call._claim.acquire(False):
                continue  # claimed and run (the slot released) by the caller or a runner
            self.run_claimed(call)

    def close(self, timeout: float = 0.5) -> None:
        """Stop the worker; a worker stuck in a provider call is left behind (it is a daemon)."""
        self._closed = True
        thread = self._thread
        if thread is None:
            return
        self._jobs.put(None)
        if not self.busy:  # a busy worker is stuck in a provider: do not make the process wait on it
            thread.join(timeout)


class Relay:
    """One helper thread that forwards a fan-out's reserved calls to their lanes' workers.

    The caller of a fan-out runs one deadline-bound call itself and means to claim the others
    (:meth:`Lane.claim`) as soon as it is done with it; they only need a worker if that first
    call takes a while.  Waking every lane's worker up front costs a thread hand-off per call
    in every recall; instead one batch goes to this thread, which, once it gets to run (at the
    latest when the caller has held the interpreter for a switch interval), forwards to its
    worker each call the caller has not claimed yet.  It never runs provider code, so no
    provider can hold it up.
    """

    def __init__(self, name: str = "paxm-relay") -> None:
        self._name = name
        self._batches: queue.SimpleQueue[list[tuple[Lane, Call[object]]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    def send(self, batch: list[tuple[Lane, Call[object]]]) -> None:
        """Forward ``batch``'s unclaimed calls to their lanes soon (at once after :meth:`close`)."""
        if self._closed:
            for lane, call in batch:
                lane.forward(call)
            return
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                    thread.start()
                    self._thread = thread
        self._batches.put(batch)

    def _work(self) -> None:
        while True:
            batch = self._batches.get()
            if batch is None:
                return
            for lane, call in batch:
                if not call._claim.locked():  # claimed meanwhile: the caller ran (or runs) it
                    lane.forward(call)

    def close(self, timeout: float = 0.5) -> None:
        """Stop the thread (it never blocks on a provider, so this is quick)."""
        self._closed = True
        thread = self._thread
        if thread is not None:
            self._batches.put(None)
            thread.join(timeout)


class _RunnerThread:
    """One thread of a :class:`Runner` and the batches handed to it."""

    __slots__ = ("jobs", "thread")

    def __init__(self, name: str) -> None:
        self.jobs: queue.SimpleQueue[list[tuple[Lane, Call[object]]] | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._work, name=name, daemon=True)

    def _work(self) -> None:
        while True:
            batch = self.jobs.get()
            if batch is None:
                return  # retired: everything handed to it before is done or forwarded
            for lane, call in batch:
                if call._claim.acquire(False):  # else its lane's worker was handed it (a stall)
                    lane.run_claimed(call)


class Runner:
    """One helper thread that runs a fan-out's quick calls one after another.

    Calls that only compute (an in-process provider that does not declare itself
    deadline-bound, say) gain nothing from a thread each: the interpreter lock runs them one at
    a time anyway, and waking a worker per call, each on whichever CPU the scheduler picks,
    costs more than the calls themselves.  The fan-out sends the calls of lanes that have been
    quick lately (:attr:`Lane.quick`), already reserved on their lanes, to this thread in one
    batch: one hand-off per fan-out instead of one per provider.

    A quick provider can still hang.  The caller therefore watches the batch and, when it is
    not done by :func:`stall_allowance`, forwards the calls this thread has not started to
    their own lanes (:meth:`Lane.forward`) and :meth:`retire`\\s the thread, which may be stuck
    in a provider; the next batch gets a new one.  A stuck thread holds its provider's slot,
    so no further call of that provider reaches any runner until it returns: there are never
    more stuck runner threads than providers.
    """

    def __init__(self, name: str = "paxm-runner") -> None:
        self._name = name
        self._current: _RunnerThread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def send(self, batch: list[tuple[Lane, Call[object]]]) -> object:
        """Run ``batch``'s calls in order on the runner thread; returns a token for :meth:`retire`."""
        current = self._current
        if current is None or self._closed:
            with self._lock:
                if self._closed:
                    for lane, call in batch:
                        lane.forward(call)
                    return None
                current = self._current
                if current is None:
                    current = self._current = _RunnerThread(self._name)
                    current.thread.start()
        current.jobs.put(batch)
        return current

    def retire(self, token: object) -> None:
        """The thread behind ``token`` did not finish a batch in time: the next batch gets a new one."""
        with self._lock:
            if isinstance(token, _RunnerThread) and self._current is token:
                self._current = None
                token.jobs.put(None)

    def close(self, timeout: float = 0.5) -> None:
        """Stop the thread; one stuck in a provider call is left behind (it is a daemon)."""
        with self._lock:
            self._closed = True
            current, self._current = self._current, None
        if current is not None:
            current.jobs.put(None)
            current.thread.join(timeout)


def stall_allowance(calls: int) -> float:
    """Seconds a caller gives a runner for a batch of ``calls`` quick calls before forwarding them.

    Each was quick (:data:`QUICK_CALL`) on its last runs; one more call's worth covers the
    hand-off.  A call that rides a runner starts at most this late when another one hangs.
    """
    return QUICK_CALL * (calls + 1)
