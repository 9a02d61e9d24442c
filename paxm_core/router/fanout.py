"""The fan-out engine: run one operation on several providers, each in its lane and deadline.

Every call runs on its provider's lane (:mod:`~paxm_core.router.bulkhead`), so a provider that
hangs never holds the caller longer than the call's deadline.  A fan-out goes in steps:

1. :func:`_prepare` gives every route its deadline (the earlier of the route's timeout and
   the caller's deadline);
2. :func:`_dispatch` hands every call whose lane is free to its worker at once;
3. :func:`_settle` waits for the lanes that were busy (earliest deadline first, so one wait
   never eats another's budget), then collects each call within its deadline.

With an optional ``grace``, the required routes are settled first; the optional ones then get
``grace`` more seconds (counted from the moment the last required route answered, or, with no
required route, from the first answer) and whatever has not answered by then is reported as
``skipped``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Generic, TypeVar

from paxm_core.api.deadline import Deadline
from paxm_core.api.errors import DeadlineExceeded, PaxmError, ProviderError
from paxm_core.api.values import value_dataclass
from paxm_core.router.bulkhead import Call, Lane, LaneBusy
from paxm_core.router.policy import Route

__all__ = ["CANCEL_POLL", "Outcome", "error_text", "fan_out", "ms"]

T = TypeVar("T")

#: How often a waiting caller looks for a cancellation of its overall deadline.
CANCEL_POLL = 0.05


@value_dataclass(slots=True)
class Outcome(Generic[T]):
    """What one provider call produced (value or error), with timing and bulkhead state.

    ``skipped``: an optional route that had not answered when the grace after the required
    routes ran out (its error says so); it may still be running on its lane.
    """

    route: Route
    value: T | None = None
    error: BaseException | None = None
    timed_out: bool = False
    busy: bool = False
    skipped: bool = False
    duration_ms: int = 0


class _Pending(Generic[T]):
    """One route of a fan-out on its way to an :class:`Outcome`."""

    __slots__ = ("call", "deadline", "dispatched", "fn", "lane", "outcome", "route")

    def __init__(self, route: Route, deadline: Deadline, dispatched: float) -> None:
        self.route = route
        self.deadline = deadline
        self.dispatched = dispatched
        self.lane: Lane | None = None
        self.fn: Callable[[], T] | None = None
        self.call: Call[T] | None = None
        self.outcome: Outcome[T] | None = None

    def elapsed_ms(self) -> int:
        return ms(time.monotonic() - self.dispatched)


def error_text(exc: BaseException) -> str:
    """The message reported in ``provider_errors`` (a ProviderError's own detail, no prefix)."""
    if isinstance(exc, ProviderError):
        return exc.detail
    text = str(exc)
    return text if text else type(exc).__name__


def ms(seconds: float | None) -> int:
    """Seconds as whole milliseconds (``None`` -> 0)."""
    return 0 if seconds is None else int(seconds * 1000)


def fan_out(
    lane: Callable[[str, str], Lane],
    op: str,
    routes: list[Route],
    overall: Deadline,
    work: Callable[[Route, Deadline], T],
    grace: float | None = None,
) -> list[Outcome[T]]:
    """Run ``work`` for every route concurrently, each under its lane and deadline.

    Free lanes are dispatched first without waiting, so a busy provider never delays the
    others; busy lanes are then waited for within their own deadlines.  ``grace`` (seconds)
    bounds how long optional routes may keep the caller once the required ones have answered
    (see the module docstring); ``None`` waits for every route until its deadline.
    """
    notify = threading.Event()  # set whenever one of this fan-out's calls finishes
    now = time.monotonic()
    pending = [_prepare(lane, op, route, overall, work, now) for route in routes]
    _dispatch(pending, notify)
    if grace is None:
        _settle(op, pending, overall, None)
    else:
        required = [item for item in pending if item.route.required]
        optional = [item for item in pending if not item.route.required]
        _settle(op, required, overall, None)
        if optional:
            start = time.monotonic() if required else _first_answer(optional, overall, notify)
            _settle(op, optional, overall, start + max(0.0, grace))
    return [item.outcome for item in pending if item.outcome is not None]  # _settle gave each one


def _prepare(
    lane: Callable[[str, str], Lane],
    op: str,
    route: Route,
    overall: Deadline,
    work: Callable[[Route, Deadline], T],
    now: float,
) -> _Pending[T]:
    """The route's deadline and call; an outcome already when no time is left."""
    # A zero or negative route timeout means "none", as upstream.  Without one the call gets
    # the caller's own deadline, so a cancel by the caller reaches the provider.
    timeout = route.timeout
    if timeout and timeout > 0:
        own = now + timeout
        at = own if overall.at is None or own < overall.at else overall.at
        deadline = Deadline(at)
        if overall.cancelled:
            deadline.cancel()  # as Deadline.child: a cancelled parent gives a cancelled child
    else:
        deadline = overall
    item: _Pending[T] = _Pending(route, deadline, now)
    if overall.cancelled or (deadline.at is not None and deadline.at <= now):
        item.outcome = Outcome(route, error=DeadlineExceeded(f"{op} deadline exceeded"), timed_out=True)
        return item
    item.lane = lane(route.name, op)
    item.fn = partial(work, route, deadline)
    return item


def _dispatch(pending: list[_Pending[T]], notify: threading.Event) -> None:
    """Start every call whose lane is free; the others keep their ``fn`` for :func:`_settle`."""
    for item in pending:
        if item.outcome is not None:
            continue
        assert item.lane is not None and item.fn is not None
        try:
            item.call = item.lane.submit(item.fn, wait=0, notify=notify)
            item.fn = None
        except LaneBusy:
            pass  # waited for in _settle, within its deadline
        except RuntimeError as exc:  # the router was closed by another thread meanwhile
            item.outcome = Outcome(item.route, error=PaxmError(str(exc)))


def _settle(op: str, items: list[_Pending[T]], overall: Deadline, cutoff: float | None) -> None:
    """Give every item its outcome: wait for busy lanes, then for the calls, by ``cutoff`` at the latest."""
    busy = [item for item in items if item.outcome is None and item.call is None]
    busy.sort(key=_deadline_order)  # earliest deadline first, unlimited last
    for item in busy:
        _submit_busy(op, item, cutoff)
    for item in items:
        if item.outcome is None:
            item.outcome = _await(op, item, overall, cutoff)


def _submit_busy(op: str, item: _Pending[T], cutoff: float | None) -> None:
    """Wait for a busy lane's slot within the item's deadline (and ``cutoff``), then start the call."""
    assert item.lane is not None and item.fn is not None
    wait = _left(item.deadline, cutoff)
    try:
        item.call = item.lane.submit(item.fn, wait=wait)
    except LaneBusy:
        if _cut_by_grace(item, cutoff):
            item.outcome = _skipped_outcome(op, item, busy=True)
        else:
            item.outcome = Outcome(
                item.route,
                error=DeadlineExceeded(f"bulkhead busy: an earlier {op} on this provider has not returned"),
                timed_out=True,
                busy=True,
                duration_ms=item.elapsed_ms(),
            )
    except RuntimeError as exc:
        item.outcome = Outcome(item.route, error=PaxmError(str(exc)))
    item.fn = None


def _first_answer(items: list[_Pending[T]], overall: Deadline, notify: threading.Event) -> float:
    """When the first of ``items`` answered (or none can any more): the start of the grace."""
    while True:
        notify.clear()  # before looking, so a call finishing meanwhile is not missed
        running = [item for item in items if item.call is not None and item.outcome is None]
        if not running or any(item.call is not None and item.call.done for item in running):
            return time.monotonic()
        earliest = min(_deadline_order(item) for item in running)
        left = earliest - time.monotonic()
        if left <= 0 or overall.cancelled:
            return time.monotonic()
        notify.wait(min(left, CANCEL_POLL))


def _await(op: str, item: _Pending[T], overall: Deadline, cutoff: float | None) -> Outcome[T]:
    """Wait for the item's call within its deadline and ``cutoff``; its outcome."""
    assert item.call is not None
    try:
        value = _wait(item.call, item.deadline, overall, cutoff)
    except TimeoutError:
        cancelled = overall.cancelled
        skipped = not cancelled and _cut_by_grace(item, cutoff)
        if item.deadline is not overall:  # the caller's own deadline is never cancelled by us
            item.deadline.cancel()  # cooperative providers stop early; the slot stays held until they do
        return _skipped_outcome(op, item) if skipped else _timeout_outcome(op, item, cancelled)
    except Exception as exc:
        return Outcome(
            item.route, error=exc, timed_out=isinstance(exc, DeadlineExceeded), duration_ms=item.elapsed_ms()
        )
    return Outcome(item.route, value=value, duration_ms=item.elapsed_ms())


def _wait(call: Call[T], deadline: Deadline, overall: Deadline, cutoff: float | None) -> T:
    """The call's value, waiting within ``deadline`` and ``cutoff``; ``TimeoutError`` past either or on a cancel."""
    while True:
        if overall.cancelled:
            raise TimeoutError
        left = _left(deadline, cutoff)
        try:
            return call.wait(CANCEL_POLL if left is None else min(left, CANCEL_POLL))
        except TimeoutError:
            if left is not None and left <= CANCEL_POLL:
                raise


def _left(deadline: Deadline, cutoff: float | None) -> float | None:
    """Seconds until the deadline or the cutoff, whichever is first (``None``: no limit)."""
    left = deadline.timeout()
    if cutoff is None:
        return left
    until_cutoff = max(0.0, cutoff - time.monotonic())
    return until_cutoff if left is None else min(left, until_cutoff)


def _cut_by_grace(item: _Pending[T], cutoff: float | None) -> bool:
    """Whether the item stopped being waited for at the grace cutoff, before its own deadline."""
    return cutoff is not None and not item.deadline.expired() and time.monotonic() >= cutoff - 0.001


def _deadline_order(item: _Pending[T]) -> float:
    at = item.deadline.at
    return math.inf if at is None else at


def _skipped_outcome(op: str, item: _Pending[T], busy: bool = False) -> Outcome[T]:
    return Outcome(
        item.route,
        error=DeadlineExceeded(f"{op} skipped: no answer within the optional-provider grace"),
        busy=busy,
        skipped=True,
        duration_ms=item.elapsed_ms(),
    )


def _timeout_outcome(op: str, item: _Pending[T], cancelled: bool) -> Outcome[T]:
    limit = item.route.timeout
    if cancelled:
        detail = f"{op} cancelled"
    else:
        detail = f"{op} timed out after {ms(limit)}ms" if limit else f"{op} deadline exceeded"
    return Outcome(item.route, error=DeadlineExceeded(detail), timed_out=True, duration_ms=item.elapsed_ms())
