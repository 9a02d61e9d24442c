"""``due_providers``: the providers with pending or retry deliveries, whatever the backlog's shape.

It probes the due index once per provider; these tests pin its answer to the plain query it
replaced (a walk of every live delivery) through every delivery state.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from _capture_helpers import event

#: the answer by definition: distinct providers with a pending or retry delivery, sorted
_REFERENCE = "SELECT DISTINCT provider FROM capture_deliveries WHERE state IN ('pending', 'retry') ORDER BY provider"


def reference(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute(_REFERENCE)]


def test_due_providers_follows_every_delivery_state(open_queue, queue_path: Path) -> None:
    q = open_queue(routes={"default": ["zeta", "alpha", "mid"]}, retry_min=60.0)
    assert q.due_providers() == [] == reference(queue_path)
    for n in range(3):
        q.append(event(f"e{n}", session=f"s{n}", terminal=True))
    assert q.due_providers() == ["alpha", "mid", "zeta"] == reference(queue_path)

    # every episode of one provider leased: it is no longer due; the others still are
    claims, _ = q.claim_batch("alpha", limit=10)
    assert len(claims) == 3
    assert q.due_providers() == ["mid", "zeta"] == reference(queue_path)

    # a failed attempt waits as a retry: due again (waiting or not), as before
    q.fail_many(claims[:1], "boom")
    assert q.due_providers() == ["alpha", "mid", "zeta"] == reference(queue_path)

    # delivered ones drop out for good
    q.complete_many(claims[1:], ["r1", "r2"])
    mid, _ = q.claim_batch("mid", limit=10)
    q.complete_many(mid, [f"m{n}" for n in range(len(mid))])
    assert q.due_providers() == ["alpha", "zeta"] == reference(queue_path)


def test_due_providers_with_many_providers_and_a_large_backlog(open_queue, queue_path: Path) -> None:
    names = [f"p{n:02d}" for n in range(12)]
    q = open_queue(routes={"default": names})
    events = []
    for n in range(300):
        events.append(event(f"b{n}", session=f"s{n % 7}", terminal=True))
    q.append_many(events)
    assert q.due_providers() == names == reference(queue_path)
    # drain every second provider completely: the skip scan must step over their rows
    for name in names[::2]:
        while True:
            claims, _ = q.claim_batch(name, limit=500)
            if not claims:
                break
            q.complete_many(claims, [c.episode_id for c in claims])
    assert q.due_providers() == names[1::2] == reference(queue_path)
