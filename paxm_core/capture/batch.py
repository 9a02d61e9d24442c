"""Deliver many leased episodes of one provider in one write (the delivery worker and ``paxm backfill``).

The claims come from :meth:`~paxm_core.capture.CaptureQueue.claim_batch`, so each session's
episodes are consecutive and in order.  One ``put`` carries every item; on success one
transaction records them all.  The guarantees are those of one-by-one delivery:

* at least once: nothing is marked delivered before the write returned; a kill -9 in between
  leaves the leases, which the next queue returns to ``retry`` and delivers again under the
  same item ids (episode ids), so an upserting provider stores each memory once;
* one bad episode fails alone: when the batch write fails (or returns the wrong number of
  refs) every episode is tried on its own, and each outcome is recorded separately;
* order per session: once an episode fails, the later episodes of its session in the batch
  are released untried (:meth:`~paxm_core.capture.CaptureQueue.release_many`, no attempt
  counted) rather than sent ahead of it.

:func:`deliver_stream` repeats this until nothing is due: claim a batch, write it, record it,
claim the next.  A batch is claimed only after the one before it is recorded, so a session's
later episodes are never leased while an earlier one is in flight (``claim_batch`` takes only
a session's undelivered prefix), and a kill -9 leaves at most one batch leased, to be re-sent
under the same ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from paxm_core.api.types import MemoryItem, MemoryRef
from paxm_core.capture.model import DeliveryClaim, DeliveryOutcome
from paxm_core.capture.queue import CaptureQueue

__all__ = ["DEFAULT_DELIVERY_BATCH", "LARGE_DELIVERY_BATCH", "Put", "deliver_batch", "deliver_stream"]

#: episodes per batched write: large enough that per-write costs vanish, small enough that a
#: write holds the provider's lock for tens of milliseconds, not seconds
DEFAULT_DELIVERY_BATCH = 256
#: episodes per batched write to a provider that declares ``large_batches`` (a local store)
LARGE_DELIVERY_BATCH = 1024

#: ``put(items) -> refs``: one write to the claims' provider; raises on failure
Put = Callable[[list[MemoryItem]], list[MemoryRef]]


def deliver_batch(queue: CaptureQueue, claims: Sequence[DeliveryClaim], put: Put) -> list[DeliveryOutcome]:
    """Write ``claims``' items with one ``put`` and record the outcomes; see the module doc.

    Returns one outcome per claim that was attempted (released claims have none).  Queue
    errors propagate: the leases stay and lease recovery retries them.
    """
    if len(claims) > 1:
        firsts, _ = _write(claims, put)
        if firsts is not None:
            return queue.complete_many(claims, firsts)
    # one by one; a failed episode holds back its session's later ones
    outcomes: list[DeliveryOutcome] = []
    blocked: set[str] = set()
    held: list[DeliveryClaim] = []
    for claim in claims:
        if claim.session_key in blocked:
            held.append(claim)
            continue
        firsts, error = _write([claim], put)
        if firsts is None:
            blocked.add(claim.session_key)
            outcomes.extend(queue.fail_many([claim], error))
        else:
            outcomes.extend(queue.complete_many([claim], firsts))
    queue.release_many(held)
    return outcomes


def _write(claims: Sequence[DeliveryClaim], put: Put) -> tuple[list[str] | None, str]:
    """One ``put`` of every claim's items: (each claim's first ref, "") or (None, the error)."""
    items = [item for claim in claims for item in claim.items]
    try:
        refs = list(put(items))
    except Exception as exc:  # any provider failure: try the episodes one by one
        return None, str(exc) or type(exc).__name__
    if refs and len(refs) != len(items) and len(claims) > 1:  # refs map to claims by position
        return None, f"put returned {len(refs)} refs for {len(items)} items"
    firsts: list[str] = []
    offset = 0
    for claim in claims:
        firsts.append(refs[offset].id if claim.items and refs else "")
        offset += len(claim.items)
    if all(firsts):
        return firsts, ""
    return None, f"{claims[0].provider}: delivery returned no ref"


#: ``report(outcomes, batch)``: what a step of :func:`deliver_stream` recorded for the claims
#: of ``batch`` (quarantined deliveries come with an empty batch)
Report = Callable[[list[DeliveryOutcome], list[DeliveryClaim]], None]


def _claim(queue: CaptureQueue, provider: str, limit: int, report: Report) -> list[DeliveryClaim]:
    """The next batch of ``provider``'s due deliveries; quarantined ones are reported here."""
    claims, dead = queue.claim_batch(provider, limit=limit)
    if dead:
        report(dead, [])
    return claims


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

    Each round claims a batch, writes it (:func:`deliver_batch`) and reports its outcomes.

    :param writer: ``writer(batch)`` -> the ``put`` for that batch (e.g. with its routes' timeout).
    :param first: an already claimed first batch (else one is claimed here).
    :param allowance: ``allowance(limit)`` -> how many the next claim may take (a rate
        limiter; it may sleep).
    :param stopping: checked after each batch; when true, the stream ends.

    Queue errors propagate; the leases they leave are recovered like a killed worker's.
    """
    take = allowance or (lambda wanted: wanted)
    claims = list(first) if first is not None else _claim(queue, provider, take(limit), report)
    attempted = 0
    while claims:
        outcomes = deliver_batch(queue, claims, writer(claims))
        attempted += len(outcomes)
        report(outcomes, claims)
        if stopping():
            break
        claims = _claim(queue, provider, take(limit), report)
    return attempted
