"""The worker's loop does not re-claim after every batch beside a stream that drains the provider."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from typing import Any

from _capture_helpers import FakeProvider, event

from paxm_core import Deadline, MemoryItem, MemoryRef
from paxm_core.capture import DeliveryWorker


class SlowBatches(FakeProvider):
    """``put_batch`` taking a few ms per write, so a stream's batches wake the loop while it runs."""

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        time.sleep(0.02)
        return [self.put(item, deadline) for item in items]


def test_loop_claims_once_beside_a_running_stream(open_queue, make_router) -> None:
    provider = SlowBatches("remote")  # not named "sqlite": 4 slots, so the loop may start more streams
    q = open_queue(routes={"default": ["remote"]})
    for n in range(12):
        q.append(event(f"u{n}", "one-session", f"prompt {n}"))
        q.append(event(f"a{n}", "one-session", f"answer {n}", terminal=True))
    loop_claims: list[int] = []
    original = q.claim_batch

    def counted(*args: Any, **kwargs: Any) -> Any:
        claims, dead = original(*args, **kwargs)
        if threading.current_thread().name == "paxm-capture-delivery":
            loop_claims.append(len(claims))
        return claims, dead

    q.claim_batch = counted  # type: ignore[method-assign]
    # a long tick: only the stream's own batches wake the loop during the flush
    worker = DeliveryWorker(q, make_router(provider), batch_size=2, tick=30.0)
    report = worker.flush(timeout=60)
    assert report.ok and report.delivered == 12, report
    # every episode of the one session, in order (the stream took them all, batch after batch)
    order = [int(n) for item in provider.puts for n in re.findall(r"answer (\d+)", item.text)]
    assert order == list(range(12)), order
    # the first claim started the stream; one more found every head leased; then the loop
    # waited for the stream instead of re-reading the backlog after each of its 6 batches
    assert loop_claims[0] == 2
    assert len(loop_claims) <= 3, loop_claims
