"""The fan-out engine: run one operation on several providers, each in its lane and deadline."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from paxm_core.deadline import Deadline
from paxm_core.errors import DeadlineExceeded, PaxmError, ProviderError
from paxm_core.router.bulkhead import Batch, Call, Lane, LaneBusy, Relay, Runner, stall_allowance
from paxm_core.router.policy import Route

__all__ = ["Outcome", "error_text", "fan_out", "ms"]


@dataclass(slots=True)
class Outcome:
    """What one provider call produced (value or error), with timing and bulkhead state."""

    route: Route
    value: object = None
    error: BaseException | None = None
    timed_out: bool = False
    busy: bool = False
    duration_ms: int = 0


@dataclass(slots=True)
class _Pending:
    route: Route
    deadline: Deadline
    dispatched: float
    call: Call[object] | None = None
    lane: Lane | None = None
    outcome: Outcome | None = None
    claimable: bool = False  # deadline-bound: the caller may run it itself
    deferred: Callable[[], object] | None = field(default=None, repr=False)


def error_text(exc: BaseException) -> str:
    """The message reported in ``provider_errors`` (a ProviderError's own detail, no prefix)."""
    if isinstance(exc, ProviderError):
        return exc.detail
    text = str(exc)
    return text if text else type(exc).__name__


def ms(seconds: float | None) -> int:
    """Seconds as whole milliseconds (``None`` -> 0)."""
    return 0 if seconds is None else int(seconds * 1000)


#: A route rides the runner only with at least this many stall allowances of budget left, so
#: that the worst a hung neighbour can do (start it one allowance late) is a small part of it.
RUNNER_BUDGET = 10


def fan_out(
    lane: Callable[[str, str], Lane],
    op: str,
    routes: list[Route],
    overall: Deadline,
    work: Callable[[Route, Deadline], object],
    deadline_bound: Callable[[str], bool] | None = None,
    relay: Relay | None = None,
    runner: Runner | None = None,
) -> list[Outcome]:
    """Run ``work`` for every route concurrently, each under its lane and deadline.

    Free lanes are dispatched first without waiting, so a busy provider never delays
    the others; busy lanes are then waited for within their own deadlines.

    One route may run on the calling thread once the others are dispatched (it saves a thread
    hand-off): a route with no time limit (the caller would wait for it anyway), or else one
    whose provider is ``deadline_bound`` (it returns by its deadline on its own, see
    :data:`~paxm_core.protocols.CAP_DEADLINE_BOUND`).  Only one is run there from the start:
    two run one after the other could let the first eat the second's budget.  The other
    deadline-bound calls go to their lanes like any call, but when the caller comes to wait
    for one its worker has not started yet (typically still waiting for the interpreter lock
    the caller held), the caller claims and runs it itself (:meth:`Lane.claim`); a worker that
    did get to its call first runs it as usual, so no call waits for another's.  With a
    ``relay``, those calls are only reserved on their lanes and sent to the relay in one batch,
    which wakes their workers only for the calls the caller has not claimed by the time it
    gets to run (see :class:`~paxm_core.router.bulkhead.Relay`): one thread hand-off per
    fan-out instead of one per call.

    With a ``runner``, when no route is deadline-bound and two or more have lanes that were
    quick lately (:attr:`~paxm_core.router.bulkhead.Lane.quick`: calls that only compute, for
    which a thread each buys nothing under the interpreter lock), those calls are reserved on
    their lanes and run one after another on the runner's thread: one hand-off for all of
    them.  The caller then runs nothing itself and watches that batch; what the runner has not
    started within :func:`~paxm_core.router.bulkhead.stall_allowance` goes to its own lane, so
    a provider that hangs delays its neighbours by a few milliseconds at most.  Only routes
    with at least :data:`RUNNER_BUDGET` times that allowance left ride the runner.
    """
    pending: list[_Pending] = []
    inline: _Pending | None = None
    reserved: list[tuple[Lane, Call[object]]] = []  # for the relay (deadline-bound, to be claimed)
    batch: Batch | None = None  # the calls handed to lanes at once, to be waited for together
    # One clock reading for the whole dispatch: every route's budget starts at the same
    # instant (the fan-out's), and the loop does not read the clock once per route.
    now = time.monotonic()
    overall_at = overall.at
    # The runner needs a caller free to watch it: no deadline-bound route (the caller would run
    # it) and at least two quick lanes (one call gains nothing over its own lane's worker).
    to_run: list[tuple[Lane, Call[object]]] = []  # for the runner
    run_batch: Batch | None = None
    allowance = 0.0
    if runner is not None and len(routes) > 1 and not overall.cancelled:
        quick = 0
        for route in routes:
            if deadline_bound is not None and deadline_bound(route.name):
                quick = 0
                break
            if lane(route.name, op).quick:
                quick += 1
        if quick > 1:
            run_batch = Batch()
            allowance = stall_allowance(quick)
    for route in routes:
        # A zero or negative route timeout means "none", as upstream.  Without one the call
        # gets the caller's own deadline, so a cancel by the caller reaches the provider.
        timeout = route.timeout
        bounded = deadline_bound is not None and deadline_bound(route.name)
        deadline: Deadline
        at: float | None
        if timeout and timeout > 0:
            own = now + timeout
            at = own if overall_at is None or own < overall_at else overall_at
            # Nobody polls for the caller's cancel while the caller runs a call itself, so the
            # deadline of a call the caller may run (a bounded one) must see it directly.
            deadline = _Linked(at, overall) if bounded else Deadline(at)
            if overall.cancelled:
                deadline.cancel()  # as Deadline.child: a cancelled parent gives a cancelled child
        else:
            at = overall_at
            deadline = overall
        item = _Pending(route, deadline, now)
        pending.append(item)
        if overall.cancelled or (at is not None and at <= now):
            item.outcome = Outcome(route, error=DeadlineExceeded(f"{op} deadline exceeded"), timed_out=True)
            continue
        item.claimable = bounded
        item.lane = lane(route.name, op)
        # A partial, not a closure: called from C, it saves a Python frame per call.
        fn = partial(work, route, deadline)
        if run_batch is not None:
            if item.lane.quick and (at is None or at - now >= RUNNER_BUDGET * allowance):
                try:
                    item.call = item.lane.reserve(fn, run_batch)
                    to_run.append((item.lane, item.call))
                except LaneBusy:
                    item.deferred = fn
                except RuntimeError as exc:
                    item.outcome = Outcome(route, error=PaxmError(str(exc)))
                continue
            # Not quick: its own lane, like any call (none runs here: the caller watches the runner).
        elif inline is None and (at is None or bounded):
            inline = item
            item.deferred = fn
            continue
        try:
            if bounded and relay is not None:
                item.call = item.lane.reserve(fn)
                reserved.append((item.lane, item.call))
            else:
                if batch is None:
                    batch = Batch()
                item.call = item.lane.submit(fn, wait=0, batch=batch)
        except LaneBusy:
            item.deferred = fn
        except RuntimeError as exc:  # the router was closed by another thread meanwhile
            item.outcome = Outcome(route, error=PaxmError(str(exc)))
    if reserved:
        assert relay is not None
        relay.send(reserved)
    if to_run:
        assert runner is not None and run_batch is not None
        _watch_runner(runner, runner.send(to_run), to_run, run_batch, now + allowance)
    busy = [item for item in pending if item.deferred is not None and item is not inline]
    if inline is not None and inline.deferred is not None:
        inline_lane = inline.lane
        assert inline_lane is not None
        if busy:
            # Busy lanes still need waiting for within their deadlines; running a route here
            # first could let those deadlines lapse unobserved.
            try:
                inline.call = inline_lane.submit(inline.deferred, wait=0)
                inline.deferred = None
            except LaneBusy:
                busy.append(inline)  # waited for in deadline order below
            except RuntimeError as exc:
                inline.outcome = Outcome(inline.route, error=PaxmError(str(exc)))
                inline.deferred = None
        else:
            try:
                # An unlimited call may wait for its slot as long as it likes; a bounded one
                # whose slot is taken is waited for within its deadline below, like any other.
                inline.call = inline_lane.run_inline(
                    inline.deferred, wait=None if inline.deadline.at is None else 0, observe=not inline.claimable
                )
                inline.deferred = None
            except LaneBusy:
                busy.append(inline)
            except RuntimeError as exc:
                inline.outcome = Outcome(inline.route, error=PaxmError(str(exc)))
                inline.deferred = None
            if inline.call is not None and inline.deadline.at is not None and inline.call.finished > inline.deadline.at:
                # Returned after its budget: reported as a timeout, exactly as if it had run
                # on its lane and the caller had stopped waiting at the deadline.
                inline.outcome = _timeout_outcome(op, inline, overall.cancelled)
    # Earliest deadline first, unlimited last, so one wait never eats another's budget.
    if len(busy) > 1:
        busy.sort(key=_deadline_order)
    for item in busy:
        assert item.deferred is not None and item.lane is not None
        try:
            item.call = item.lane.submit(item.deferred, wait=item.deadline.timeout())
        except LaneBusy:
            item.outcome = Outcome(
                item.route,
                error=DeadlineExceeded(f"bulkhead busy: an earlier {op} on this provider has not returned"),
                timed_out=True,
                busy=True,
                duration_ms=ms(time.monotonic() - item.dispatched),
            )
        except RuntimeError as exc:
            item.outcome = Outcome(item.route, error=PaxmError(str(exc)))
        item.deferred = None
    if batch is not None and not any(item.claimable for item in pending):
        _wait_batch(batch, pending, overall)
    outcomes: list[Outcome] = []
    for item in pending:
        outcome = item.outcome
        if outcome is None:
            call = item.call
            if (
                item.claimable
                and call is not None
                and item.lane is not None
                and item.deadline.remaining() > 0.0  # not expired (nor cancelled)
                and item.lane.claim(call)
            ):
                # Its worker had not picked it up yet: the caller ran it rather than wait for
                # the worker to run it and hand it back.  Late is late, as on the lane.
                at = item.deadline.at
                if at is not None and call.finished > at:
                    outcome = item.outcome = _timeout_outcome(op, item, overall.cancelled)
            if outcome is None:
                if call is not None and call._finished and call._error is None and not overall.cancelled:
                    # _await's common case (run here, or claimed, and returned), without the call
                    outcome = Outcome(
                        item.route, call._value, duration_ms=int((time.monotonic() - item.dispatched) * 1000)
                    )
                else:
                    outcome = _await(op, item, overall)
                item.outcome = outcome
        outcomes.append(outcome)
    return outcomes


def _watch_runner(
    runner: Runner, token: object, calls: list[tuple[Lane, Call[object]]], batch: Batch, until: float
) -> None:
    """Wait for the runner's batch until ``until``; then hand what it has not started to the lanes.

    A caller's cancel does not cut this short: the calls hold their lanes' slots, so each must
    be run by somebody soon, and the wait is a few milliseconds at most.
    """
    while not batch.done:
        left = until - time.monotonic()
        if left <= 0:
            break
        batch.wait(left)
    if batch.done:
        return
    runner.retire(token)  # it may be stuck in a provider: the next batch gets a new thread
    for lane, call in calls:
        if call._claim.locked():
            if not call._finished:
                lane.not_quick()  # the one it is stuck in (or still running): its own lane from now on
        else:
            lane.forward(call)  # not started: its lane's worker runs it unless the runner gets there first


def _deadline_order(item: _Pending) -> float:
    at = item.deadline.at
    return math.inf if at is None else at


class _Linked(Deadline):
    """A route's deadline that also sees a later cancel of the caller's (for inline calls)."""

    __slots__ = ("_parent",)

    def __init__(self, at: float | None, parent: Deadline) -> None:
        self._at = at
        self._cancelled = False
        self._parent = parent

    @property
    def cancelled(self) -> bool:
        return self._cancelled or self._parent.cancelled

    def remaining(self) -> float:
        # Deadline.remaining with the parent's cancel (written out: asked once per claimed call)
        if self._cancelled or self._parent.cancelled:
            return 0.0
        at = self._at
        if at is None:
            return math.inf
        left = at - time.monotonic()
        return left if left > 0.0 else 0.0

    def timeout(self, cap: float | None = None) -> float | None:
        if self._parent.cancelled:
            return 0.0 if cap is None else min(0.0, cap)
        return super().timeout(cap)

    def check(self, op: str = "operation") -> None:
        if self._parent.cancelled:
            self._cancelled = True
        super().check(op)


#: How often a waiting caller looks for a cancellation of its overall deadline.
CANCEL_POLL = 0.05


def _wait(item: _Pending, overall: Deadline) -> object:
    """Wait for the call within its deadline, giving up early if ``overall`` is cancelled."""
    assert item.call is not None
    while True:
        left = item.deadline.timeout()
        if overall.cancelled:
            raise TimeoutError
        try:
            return item.call.wait(CANCEL_POLL if left is None else min(left, CANCEL_POLL))
        except TimeoutError:
            if item.deadline.expired():
                raise


def _wait_batch(batch: Batch, pending: list[_Pending], overall: Deadline) -> None:
    """Sleep until every call of ``batch`` is done, the earliest deadline among them, or a cancel.

    Only a shortcut: the calls are then collected one by one exactly as without it (a call
    still running at its deadline is waited for, and timed out, by :func:`_await`).
    """
    earliest = math.inf
    for item in pending:
        if item.call is not None and item.call._batch is batch:
            at = item.deadline.at
            if at is None:
                continue
            earliest = min(earliest, at)
    while not batch.done and not overall.cancelled:
        left = earliest - time.monotonic()
        if left <= 0:
            return
        batch.wait(min(left, CANCEL_POLL))


def _await(op: str, item: _Pending, overall: Deadline) -> Outcome:
    call = item.call
    assert call is not None
    if call._finished and call._error is None and not overall.cancelled:
        # The common case (run here, or claimed, and returned): its value, without a wait.
        return Outcome(item.route, call._value, duration_ms=ms(time.monotonic() - item.dispatched))
    try:
        # A call already done (run here, or claimed) needs no waiting: its value or error.
        value = call.wait(0.0) if call.done and not overall.cancelled else _wait(item, overall)
    except TimeoutError:
        cancelled = overall.cancelled
        if item.deadline is not overall:  # the caller's own deadline is never cancelled by us
            item.deadline.cancel()  # cooperative providers stop early; the slot stays held until they do
        return _timeout_outcome(op, item, cancelled)
    except Exception as exc:
        return Outcome(
            item.route,
            error=exc,
            timed_out=isinstance(exc, DeadlineExceeded),
            duration_ms=ms(time.monotonic() - item.dispatched),
        )
    return Outcome(item.route, value=value, duration_ms=ms(time.monotonic() - item.dispatched))


def _timeout_outcome(op: str, item: _Pending, cancelled: bool) -> Outcome:
    limit = item.route.timeout
    if cancelled:
        detail = f"{op} cancelled"
    else:
        detail = f"{op} timed out after {ms(limit)}ms" if limit else f"{op} deadline exceeded"
    return Outcome(
        item.route,
        error=DeadlineExceeded(detail),
        timed_out=True,
        duration_ms=ms(time.monotonic() - item.dispatched),
    )
