"""Delivering the backfill queue on a thread of the run.

Delivery is :func:`paxm_core.capture.batch.deliver_stream` per provider (claims in batches,
one provider ``put_batch`` per batch, ``complete_many``), at ``--rate`` for remote providers.
It runs on one background thread of the run, kicked after each append, while the run's own
thread reads and renders the next batch; both use the run's one
:class:`~paxm_core.capture.CaptureQueue`, whose transactions take turns on its lock.  A kill -9
at any point leaves leases that the next opener of the queue returns to ``retry``: nothing is
lost, and a re-sent episode is an upsert of the same id.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paxm_core.api.types import MemoryItem, MemoryRef
    from paxm_core.backfill.rate import RateLimiter
    from paxm_core.capture.model import DeliveryClaim, DeliveryOutcome
    from paxm_core.capture.queue import CaptureQueue
    from paxm_core.router.core import Router

__all__ = ["DELIVERY_TIMEOUT", "ThreadDeliverer", "deliver_all", "with_sequences"]

DELIVERY_TIMEOUT = 120.0

#: ``record(delivered, errors)``: what a delivered batch reports
Record = Callable[[int, list[str]], None]


def with_sequences(items: list[MemoryItem]) -> list[MemoryItem]:
    """Give past items their session sequence from the time they happened.

    A live write gets the next sequence of its session from the shared sequence store (one
    fsynced transaction each); a past turn's place in its session is known: its start time
    in nanoseconds, the same scale the store uses, so past and live turns interleave in the
    order they happened.  The router keeps an explicit ``sequence`` as given.
    """
    from paxm_core.attribution import META_SEQUENCE

    out = []
    last: dict[str, int] = {}
    for item in items:
        if (item.metadata.get(META_SEQUENCE) or "").strip() or item.created_at is None:
            out.append(item)
            continue
        session = item.origin.session_id.strip() or item.metadata.get("session_id", "")
        sequence = max(int(item.created_at.timestamp() * 1_000_000) * 1000, last.get(session, 0) + 1)
        last[session] = sequence
        out.append(item.replace(metadata={**item.metadata, META_SEQUENCE: str(sequence)}))
    return out


def deliver_all(
    queue: CaptureQueue,
    router: Router,
    providers: Sequence[str],
    limiters: dict[str, RateLimiter],
    batch: int,
    record: Record,
) -> None:
    """One delivery pass: each provider's claimable episodes, in batches, until none is claimable."""
    from paxm_core.capture.batch import deliver_stream

    def report(outcomes: list[DeliveryOutcome], _claims: list[DeliveryClaim]) -> None:
        delivered = 0
        errors: list[str] = []
        for outcome in outcomes:
            if outcome.state == "delivered":
                delivered += 1
            elif outcome.error:
                errors.append(f"{outcome.episode_id}: {outcome.error}"[:300])
        record(delivered, errors[-20:])

    for provider in providers:

        def put(items: list[MemoryItem], provider: str = provider) -> list[MemoryRef]:
            return list(router.put_to_provider(provider, with_sequences(items), DELIVERY_TIMEOUT))

        # the rate limiter is waited for before each claim; dead deliveries are counted
        # from the queue status at the end
        deliver_stream(
            queue,
            provider,
            lambda _claims, put=put: put,  # type: ignore[misc]
            report,
            limit=batch,
            allowance=limiters[provider].allowance,
        )


class ThreadDeliverer:
    """Runs ``deliver()`` on one background thread whenever kicked; errors surface in the caller."""

    def __init__(self, deliver: Callable[[], None], owed: Callable[[], int]) -> None:
        self._deliver = deliver
        self._owed = owed
        self._cond = threading.Condition()
        self._wanted = False
        self._busy = False
        self._closed = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread and deliver what a killed run left (the first pass)."""
        self._deliver()
        self._thread = threading.Thread(target=self._loop, name="paxm-backfill-delivery", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._wanted and not self._closed:
                    self._cond.wait()
                if not self._wanted:
                    return
                self._wanted, self._busy = False, True
            try:
                self._deliver()
            except BaseException as exc:  # handed to the run's thread
                with self._cond:
                    self._error = exc
            with self._cond:
                self._busy = False
                self._cond.notify_all()
                if self._error is not None:
                    return

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def kick(self) -> None:
        """Ask for a delivery pass (after an append)."""
        with self._cond:
            self._raise()
            self._wanted = True
            self._cond.notify_all()

    def wait_below(self, backlog: int) -> None:
        """Wait while a delivery pass runs and more than ``backlog`` sealed episodes are owed.

        A pass ends when nothing is claimable, so what is owed after it waits for a retry
        (a failing provider): the run goes on, as a synchronous delivery would.
        """
        while True:
            with self._cond:
                self._raise()
                if not self._busy and not self._wanted:
                    return
            if self._owed() <= backlog:
                return
            with self._cond:
                if self._busy or self._wanted:
                    self._cond.wait(0.05)

    def finish(self) -> None:
        """Stop the thread, then deliver what is left on the caller's thread."""
        self.abandon()
        with self._cond:
            self._raise()
        self._deliver()

    def abandon(self) -> None:
        """Stop the thread after the pass in hand (what is left stays queued)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
