"""Deliver many leased episodes of one provider in one write, without weakening the queue.

Used by the delivery worker (for providers with ``put_batch``) and by ``paxm backfill``.
The claims come from :meth:`~paxm_core.capture.CaptureQueue.claim_batch`, so each session's
episodes are consecutive and in order.  One ``put`` carries every item; on success one
transaction records them all (:meth:`~paxm_core.capture.CaptureQueue.complete_many`).

The guarantees are those of one-by-one delivery:

* at least once: nothing is marked delivered before the write returned; a kill -9 in between
  leaves the leases, which the next queue returns to ``retry`` and delivers again under the
  same item ids (episode ids), so an upserting provider stores each memory once;
* one bad episode fails alone: when the batch write fails (or returns the wrong number of
  refs) every episode is tried on its own, and each outcome is recorded separately;
* order per session: once an episode fails, the later episodes of its session in the batch
  are released untried (:meth:`~paxm_core.capture.CaptureQueue.release_many`, no attempt
  counted) rather than sent ahead of it.

:func:`deliver_stream` repeats this until nothing is due, claiming batch N+1 on a helper
thread while batch N is written (SQLite releases the GIL inside statements, so a claim's
reads and a provider's write overlap on two cores).  Batch N+1 is written only after batch
N's write returned: when every episode of N was delivered, the helper records N while N+1
is written (the recording no longer sits between two writes); otherwise N is recorded first
and N+1's episodes of a session that did not fully deliver are released untried.  Per-session
order holds across batches as within one: a session's episodes reach the provider in order,
and a kill -9 before N is recorded leaves N and N+1 leased, to be re-sent in that order under
the same ids.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from paxm_core.api.types import MemoryItem, MemoryRef
from paxm_core.capture.model import DeliveryClaim, DeliveryOutcome
from paxm_core.capture.queue import CaptureQueue

__all__ = ["DEFAULT_DELIVERY_BATCH", "LARGE_DELIVERY_BATCH", "Put", "deliver_batch", "deliver_stream"]

#: episodes per batched write: large enough that per-write costs vanish, small enough that a
#: write holds the provider's lock for tens of milliseconds, not seconds
DEFAULT_DELIVERY_BATCH = 256
#: episodes per batched write to a provider that declares ``large_batches`` (a local store:
#: about 0.15 s of SQLite writing per batch); ``queue_bench.py`` measured 1,024 against 256
LARGE_DELIVERY_BATCH = 1024

#: ``put(items) -> refs``: one write to the claims' provider; raises on failure
Put = Callable[[list[MemoryItem]], list[MemoryRef]]


def _error(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def deliver_batch(queue: CaptureQueue, claims: Sequence[DeliveryClaim], put: Put) -> list[DeliveryOutcome]:
    """Write ``claims``' items with one ``put`` and record the outcomes; see the module doc.

    Returns one outcome per claim that was attempted (released claims have none).  Queue
    errors propagate: the leases stay and lease recovery retries them.
    """
    if not claims:
        return []
    firsts, error = _write(claims, put)
    if firsts is not None:
        return queue.complete_many(claims, firsts)
    return _after_failure(queue, claims, put, error)


def _write(claims: Sequence[DeliveryClaim], put: Put) -> tuple[list[str] | None, str]:
    """One ``put`` of every claim's items: (each claim's first ref, "") or (None, the error)."""
    items = [item for claim in claims for item in claim.items]
    try:
        refs = list(put(items))
        error = "" if len(refs) == len(items) else f"put returned {len(refs)} refs for {len(items)} items"
    except Exception as exc:  # any provider failure: try the episodes one by one
        refs, error = [], _error(exc)
    if not error:
        firsts: list[str] = []
        offset = 0
        for claim in claims:
            firsts.append(refs[offset].id if claim.items else "")
            offset += len(claim.items)
        if all(firsts):
            return firsts, ""
        error = f"{claims[0].provider}: delivery returned no ref"
    return None, error


def _after_failure(queue: CaptureQueue, claims: Sequence[DeliveryClaim], put: Put, error: str) -> list[DeliveryOutcome]:
    if len(claims) == 1:
        return [queue.fail(claims[0], error)]
    return _one_by_one(queue, claims, put)


def _one_by_one(queue: CaptureQueue, claims: Sequence[DeliveryClaim], put: Put) -> list[DeliveryOutcome]:
    outcomes: list[DeliveryOutcome] = []
    blocked: set[str] = set()
    held: list[DeliveryClaim] = []
    for claim in claims:
        if claim.session_key in blocked:
            held.append(claim)
            continue
        try:
            refs = list(put(list(claim.items)))
            ref = refs[0].id if refs else ""
            error = "" if ref else f"{claim.provider}: delivery returned no ref"
        except Exception as exc:
            ref, error = "", _error(exc)
        if error:
            blocked.add(claim.session_key)
            outcomes.append(queue.fail(claim, error))
        else:
            outcomes.extend(queue.complete_many([claim], [ref]))
    queue.release_many(held)
    return outcomes


#: ``report(outcomes, batch)``: what a step of :func:`deliver_stream` recorded for the claims
#: of ``batch`` (quarantined deliveries come with an empty batch)
Report = Callable[[list[DeliveryOutcome], list[DeliveryClaim]], None]


class _Prefetch:
    """While batch N is written: claims batch N+1, then records batch N once it is written.

    The claim waits for the previous helper's recording (batch N-1), so batch N-1's rows are
    no longer in the way of the claim behind batch N.  The recording runs only when the
    writer hands over batch N's refs (:meth:`record`); ``record(None)`` (batch N failed, or
    the stream ends) leaves the recording to the writer.
    """

    def __init__(
        self,
        queue: CaptureQueue,
        provider: str,
        take: Callable[[int], int],
        limit: int,
        behind: list[DeliveryClaim],
        after: _Prefetch | None,
    ) -> None:
        self._queue, self._provider, self._take, self._limit, self._behind = queue, provider, take, limit, behind
        self._after = after
        self.claims: list[DeliveryClaim] = []
        self.dead: list[DeliveryOutcome] = []
        self.error: BaseException | None = None
        self._claimed = threading.Event()
        self._written = threading.Event()
        self._firsts: list[str] | None = None
        self.outcomes: list[DeliveryOutcome] | None = None
        self.record_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="paxm-delivery-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            if self._after is not None:
                self._after.recorded()
            # the allowance (a rate limiter's sleep) waits here too, while the write runs
            wanted = self._take(self._limit)
            self.claims, self.dead = self._queue.claim_batch(self._provider, limit=wanted, behind=self._behind)
        except BaseException as exc:  # handed to the caller's thread
            self.error = exc
        finally:
            self._claimed.set()
        self._written.wait()
        if self._firsts is not None:
            try:
                self.outcomes = self._queue.complete_many(self._behind, self._firsts)
            except BaseException as exc:  # handed to the caller's thread
                self.record_error = exc

    def record(self, firsts: list[str] | None) -> None:
        """Batch N was written (``firsts``: each claim's first ref) or is recorded elsewhere (``None``)."""
        if not self._written.is_set():
            self._firsts = firsts
            self._written.set()

    def recorded(self) -> list[DeliveryOutcome] | None:
        """Wait for the recording of batch N; its outcomes (``None`` when not recorded here)."""
        self._thread.join()
        if self.record_error is not None:
            raise self.record_error
        return self.outcomes

    def result(self) -> tuple[list[DeliveryClaim], list[DeliveryOutcome]]:
        self._claimed.wait()
        if self.error is not None:
            raise self.error
        return self.claims, self.dead


def _next_batch(
    queue: CaptureQueue,
    prefetch: _Prefetch,
    claims: list[DeliveryClaim],
    outcomes: list[DeliveryOutcome] | None,
    report: Report,
    stopping: Callable[[], bool],
) -> list[DeliveryClaim]:
    """The prefetched batch, less (released untried) the claims of sessions this batch blocked.

    ``outcomes`` ``None``: every episode of ``claims`` was written, so no session is blocked.
    When ``stopping()``, the whole prefetched batch is released.
    """
    following, dead = prefetch.result()
    if dead:
        report(dead, [])
    if outcomes is None:
        blocked: set[str] = set()
    else:
        delivered = {o.episode_id for o in outcomes if o.state == "delivered"}
        blocked = {c.session_key for c in claims if c.episode_id not in delivered}
    held = following if stopping() else [c for c in following if c.session_key in blocked]
    if held:
        queue.release_many(held)
        kept = {id(c) for c in held}
        following = [c for c in following if id(c) not in kept]
    return following


def deliver_stream(
    queue: CaptureQueue,
    provider: str,
    writer: Callable[[list[DeliveryClaim]], Put],
    report: Report,
    *,
    limit: int = DEFAULT_DELIVERY_BATCH,
    first: Sequence[DeliveryClaim] | None = None,
    allowance: Callable[[int], int] | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> int:
    """Deliver ``provider``'s due episodes in batches until none is due; returns episodes attempted.

    :param writer: ``writer(batch)`` -> the ``put`` for that batch (e.g. with its routes' timeout).
    :param first: an already claimed first batch (else one is claimed here).
    :param allowance: ``allowance(limit)`` -> how many the next claim may take (a rate
        limiter; it may sleep).  It runs on the prefetch thread, overlapping the write.
    :param stopping: checked between batches; when true, a prefetched batch is released
        untried and the stream ends.

    Queue errors propagate; the leases they leave are recovered like a killed worker's.
    """
    take = allowance or (lambda wanted: wanted)
    if first is None:
        claims, dead = queue.claim_batch(provider, limit=take(limit))
        if dead:
            report(dead, [])
    else:
        claims = list(first)
    attempted = 0
    # the helper recording the previous batch (it ran ahead: this batch was written meanwhile)
    recording: tuple[_Prefetch, list[DeliveryClaim]] | None = None
    try:
        while claims:
            prefetch = (
                None if stopping() else _Prefetch(queue, provider, take, limit, claims, recording and recording[0])
            )
            try:
                put = writer(claims)
                firsts, error = _write(claims, put)
                if recording is not None:  # the batch before this one, in order
                    attempted += _report_recorded(recording, report)
                    recording = None
                if firsts is not None and prefetch is not None:
                    # all delivered: the helper records this batch once it has claimed the
                    # next, so the next write need not wait for this batch's recording
                    prefetch.record(firsts)
                    recording, outcomes = (prefetch, claims), None
                else:
                    if prefetch is not None:
                        prefetch.record(None)
                    if firsts is not None:
                        outcomes = queue.complete_many(claims, firsts)
                    else:
                        outcomes = _after_failure(queue, claims, put, error)
            except BaseException:
                if prefetch is not None:
                    prefetch.record(None)
                    _release_quietly(queue, prefetch)
                raise
            if outcomes is not None:
                attempted += len(outcomes)
                report(outcomes, claims)
            if prefetch is None:
                break
            claims = _next_batch(queue, prefetch, claims, outcomes, report, stopping)
    except BaseException:
        if recording is not None:  # a batch written before the error: report what was recorded
            try:
                _report_recorded(recording, report)
            except Exception:  # the original error matters more; lease recovery covers the rest
                pass
        raise
    if recording is not None:  # the last written batch's recording
        attempted += _report_recorded(recording, report)
    return attempted


def _report_recorded(recording: tuple[_Prefetch, list[DeliveryClaim]], report: Report) -> int:
    helper, claims = recording
    outcomes = helper.recorded() or []
    report(outcomes, claims)
    return len(outcomes)


def _release_quietly(queue: CaptureQueue, prefetch: _Prefetch) -> None:
    try:
        claims, _ = prefetch.result()
        queue.release_many(claims)
    except Exception:  # the original error matters more; lease recovery covers the rest
        pass
    try:
        prefetch.recorded()  # a recording handed over before the error still finishes
    except Exception:
        pass
