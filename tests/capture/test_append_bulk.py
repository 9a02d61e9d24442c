"""``append_many`` (sealed episodes written with executemany) stores exactly what one ``append``
per event stores, also when a session already has open events."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _capture_helpers import dump_queue, event

from paxm_core.api.errors import QueueError
from paxm_core.capture import CaptureQueue


def _stream() -> list[Any]:
    out: list[Any] = []
    for n in range(12):
        session = f"s{n % 3}"
        out.append(event(f"{session}-u{n}", session, f"prompt {session} {n}"))
        if n % 4 == 1:  # a turn with a tool message in between
            out.append(event(f"{session}-t{n}", session, f"tool {session} {n}"))
        out.append(event(f"{session}-e{n}", session, f"answer {session} {n}", terminal=True))
    out.append(event("s9-u", "s9", "left open: no turn end yet"))
    return out


_EVENTS = (
    "SELECT event_id, session_key, sequence, source_sequence, final_sequence, terminal, payload_json,"
    " payload_hash, created_at, episode_id FROM capture_events ORDER BY rowid"
)


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    dumped: dict[str, list[tuple[Any, ...]]] = dump_queue(path, _EVENTS)
    return dumped


def test_bulk_append_stores_what_one_append_per_event_stores(tmp_path: Path) -> None:
    stream = _stream()
    one = CaptureQueue(tmp_path / "one.sqlite", routes={"default": ["sqlite"]}, clock=lambda: 1000.0)
    bulk = CaptureQueue(tmp_path / "bulk.sqlite", routes={"default": ["sqlite"]}, clock=lambda: 1000.0)
    try:
        singles = [one.append(e) for e in stream]
        many = bulk.append_many(stream)
    finally:
        one.close()
        bulk.close()
    assert [(r.event_id, r.sequence, bool(r.sealed_episode)) for r in many] == [
        (r.event_id, r.sequence, bool(r.sealed_episode)) for r in singles
    ]
    # episode hashes differ only through the random ids inside the payloads: compare payloads
    assert _dump(tmp_path / "bulk.sqlite") == _dump(tmp_path / "one.sqlite")
    dumped = _dump(tmp_path / "bulk.sqlite")
    assert len(dumped["episodes"]) == 12 and len(dumped["deliveries"]) == 12
    assert dumped["events"][-1][-1] == ""  # the unterminated turn stays open


def test_bulk_append_continues_a_session_with_open_events(open_queue: Any, queue_path: Path) -> None:
    queue = open_queue()
    queue.append(event("a-u0", "a", "prompt a 0"))  # open: a killed run left it unsealed
    results = queue.append_many([event("a-e0", "a", "answer a 0", terminal=True), event("b-u0", "b", "prompt b")])
    assert results[0].sealed_episode and results[0].sequence == 2
    claims, _ = queue.claim_batch("sqlite")
    assert [c.items[0].text for c in claims] == ["prompt a 0\n\nanswer a 0"]
    with sqlite3.connect(queue_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM capture_events WHERE episode_id = ''").fetchone()[0] == 1


def test_keep_existing_keeps_the_stored_copy(open_queue: Any, queue_path: Path) -> None:
    queue = open_queue()
    queue.append_many([event("a-u0", "a", "prompt a 0"), event("a-e0", "a", "answer a 0", terminal=True)])
    changed = [event("a-u0", "a", "prompt a 0, re-rendered"), event("a-e0", "a", "answer 0 v2", terminal=True)]
    with pytest.raises(QueueError, match="conflicts"):
        queue.append_many(changed)
    again = queue.append_many([*changed, event("a-u1", "a", "prompt a 1")], keep_existing=True)
    assert [r.duplicate for r in again] == [True, True, False]
    assert again[2].sequence == 3
    claims, _ = queue.claim_batch("sqlite")
    assert [c.items[0].text for c in claims] == ["prompt a 0\n\nanswer a 0"]


def test_bulk_append_rejects_an_empty_open_event_and_writes_nothing(open_queue: Any, queue_path: Path) -> None:
    queue = open_queue()
    with pytest.raises(QueueError, match="text is required"):
        queue.append_many([event("a-u0", "a", "prompt"), event("a-x", "a", "  ")])
    with sqlite3.connect(queue_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM capture_events").fetchone()[0] == 0
