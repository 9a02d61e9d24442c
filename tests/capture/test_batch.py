"""The batched path (``append_many``, ``claim_batch``, ``complete_many``) used by ``paxm backfill``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _capture_helpers import event

from paxm_core.api.errors import QueueError


def _turns(session: str, count: int, start: int = 0) -> list[Any]:
    out = []
    for n in range(start, start + count):
        out.append(event(f"{session}-u{n}", session, f"prompt {session} {n}"))
        out.append(event(f"{session}-e{n}", session, f"answer {session} {n}", terminal=True))
    return out


def test_append_many_seals_each_turn_and_is_idempotent(open_queue: Any) -> None:
    queue = open_queue()
    results = queue.append_many(_turns("a", 3) + _turns("b", 2))
    assert sum(1 for r in results if r.sealed_episode) == 5
    again = queue.append_many(_turns("a", 3))
    assert all(r.duplicate for r in again)
    assert queue.status().deliveries == {"pending": 5}


def test_append_many_is_all_or_nothing(open_queue: Any, queue_path: Path) -> None:
    queue = open_queue()
    bad = [*_turns("a", 2), event("a-u0", "a", "different text")]  # conflicts with an earlier id
    with pytest.raises(QueueError, match="conflicts"):
        queue.append_many(bad)
    with sqlite3.connect(queue_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM capture_events").fetchone()[0] == 0


def test_claim_batch_takes_consecutive_episodes_per_session_in_order(open_queue: Any) -> None:
    queue = open_queue()
    queue.append_many(_turns("a", 4) + _turns("b", 3))
    claims, dead = queue.claim_batch("sqlite", limit=100)
    assert dead == []
    order = [(c.session_key, c.items[0].text) for c in claims]
    assert [t for s, t in order if s == "a"] == [f"prompt a {n}\n\nanswer a {n}" for n in range(4)]
    assert len([1 for s, _ in order if s == "b"]) == 3
    assert queue.claim_batch("sqlite")[0] == []  # all leased now
    queue.complete_many(claims, [f"ref{i}" for i in range(len(claims))])
    assert queue.status().deliveries == {"delivered": 7}
    assert queue.owed() == 0


def test_claim_batch_never_overtakes_an_earlier_undelivered_episode(open_queue: Any) -> None:
    queue = open_queue(retry_min=3600)
    queue.append_many(_turns("a", 3))
    first, _ = queue.claim_batch("sqlite", limit=1)
    assert len(first) == 1
    # the head is leased: the later episodes must wait for it
    assert queue.claim_batch("sqlite")[0] == []
    queue.fail_many(first[:1], "provider down")  # head now waits an hour for its retry
    assert queue.claim_batch("sqlite")[0] == []
    queue.make_due()
    claims, _ = queue.claim_batch("sqlite")
    assert [c.items[0].text.split("\n")[0] for c in claims] == ["prompt a 0", "prompt a 1", "prompt a 2"]


def test_claim_batch_respects_limit_and_other_providers(open_queue: Any) -> None:
    queue = open_queue(routes={"default": ["sqlite", "mem0"]})
    queue.append_many(_turns("a", 5))
    claims, _ = queue.claim_batch("sqlite", limit=2)
    assert len(claims) == 2 and {c.provider for c in claims} == {"sqlite"}
    assert len(queue.claim_batch("mem0", limit=10)[0]) == 5


def test_claim_batch_quarantines_a_corrupt_episode(open_queue: Any, queue_path: Path) -> None:
    queue = open_queue()
    queue.append_many(_turns("a", 2))
    with sqlite3.connect(queue_path) as conn:
        conn.execute(
            "UPDATE capture_episodes SET payload_json = replace(payload_json, 'prompt', 'PROMPT')"
            " WHERE first_sequence = 1"
        )
    claims, dead = queue.claim_batch("sqlite")
    assert claims == [] and len(dead) == 1 and "checksum" in (dead[0].error or "")
    # the dead head no longer blocks its session
    claims, _ = queue.claim_batch("sqlite")
    assert len(claims) == 1


def test_complete_many_needs_one_ref_per_claim(open_queue: Any) -> None:
    queue = open_queue()
    queue.append_many(_turns("a", 2))
    claims, _ = queue.claim_batch("sqlite")
    with pytest.raises(QueueError, match="one ref per claim"):
        queue.complete_many(claims, ["only-one"])


def test_complete_many_marks_exactly_the_claims_still_leased_to_it(open_queue: Any, queue_path: Path) -> None:
    # a lease taken over meanwhile is not marked, a claim listed twice takes its first ref
    queue = open_queue()
    queue.append_many(_turns("a", 3) + _turns("b", 3))
    claims, _ = queue.claim_batch("sqlite", limit=100)
    assert len(claims) == 6
    taken_over = claims[1]
    with sqlite3.connect(queue_path) as conn:
        conn.execute(
            "UPDATE capture_deliveries SET lease_owner = 'someone-else' WHERE episode_id = ?", (taken_over.episode_id,)
        )
    batch = [claims[0], taken_over, claims[2], claims[3], claims[4], claims[5], claims[0]]
    outcomes = queue.complete_many(batch, ["r0", "r1", "r2", "r3", "r4", "r5", "again"])
    assert [o.ref for o in outcomes] == ["r0", "r1", "r2", "r3", "r4", "r5", "again"]
    with sqlite3.connect(queue_path) as conn:
        rows = dict(
            (
                (episode, (state, ref, lease))
                for episode, state, ref, lease in conn.execute(
                    "SELECT episode_id, state, provider_ref, lease_owner FROM capture_deliveries"
                )
            )
        )
    assert rows[taken_over.episode_id] == ("delivering", "", "someone-else")
    expected = {c.episode_id: ref for c, ref in zip(claims, ["r0", "", "r2", "r3", "r4", "r5"], strict=True)}
    for episode, ref in expected.items():
        if ref:
            assert rows[episode] == ("delivered", ref, ""), episode
    states = queue.status().episodes
    assert states == {"delivered": 5, "pending": 1}
