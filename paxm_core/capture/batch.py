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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from paxm_core.capture.model import DeliveryClaim, DeliveryOutcome
from paxm_core.capture.queue import CaptureQueue
from paxm_core.types import MemoryItem, MemoryRef

__all__ = ["DEFAULT_DELIVERY_BATCH", "Put", "deliver_batch"]

#: episodes per batched write: large enough that per-write costs vanish, small enough that a
#: write holds the provider's lock for tens of milliseconds, not seconds
DEFAULT_DELIVERY_BATCH = 256

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
            return queue.complete_many(claims, firsts)
        error = f"{claims[0].provider}: delivery returned no ref"
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
