"""``append_many`` given events encoded in a backfill worker stores exactly what it stores for
the same events, including the conflict rules."""

from __future__ import annotations

import pickle
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from paxm_core.api.errors import QueueError
from paxm_core.api.types import MemoryItem
from paxm_core.capture import CaptureQueue
from paxm_core.capture.model import CaptureEvent
from paxm_core.capture.queue import encode_event
from tests._kit import load_module

_capture_helpers = load_module("_capture_helpers", Path(__file__).parents[1] / "capture" / "_helpers.py", register=True)


def _event(event_id: str, session: str, text: str, *, terminal: bool = False, profile: str = "default") -> CaptureEvent:
    item = MemoryItem(text=text, created_at=datetime.fromtimestamp(1_700_000_000.0, UTC), metadata={"k": "v é"})
    captured = datetime.fromtimestamp(1_700_000_100.5, UTC) if not event_id.endswith("-now") else None
    return CaptureEvent(event_id, session, item, profile=profile, terminal=terminal, captured_at=captured)


def _stream() -> list[CaptureEvent]:
    out: list[CaptureEvent] = []
    for n in range(9):
        session = f"s{n % 3}"
        out.append(_event(f"{session}-u{n}", session, f"prompt {session} {n}"))
        if n % 4 == 1:
            out.append(_event(f"{session}-t{n}-now", session, f"tool {session} {n}"))
        out.append(_event(f"{session}-e{n}", session, f"answer {session} {n}", terminal=True))
    out.append(_event("s7-u", "s7", "x", profile="unrouted"))
    out.append(_event("s7-e", "s7", "", terminal=True, profile="unrouted"))  # sealed, no provider: dead
    out.append(_event("s9-u", "s9", "left open"))
    return out


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    dumped: dict[str, list[tuple[Any, ...]]] = _capture_helpers.dump_queue(
        path, "SELECT * FROM capture_events ORDER BY rowid"
    )
    return dumped


def _queue(path: Path) -> CaptureQueue:
    return CaptureQueue(path, routes={"default": ["sqlite"]}, clock=lambda: 1000.0)


def _pair(tmp_path: Path) -> tuple[CaptureQueue, CaptureQueue]:
    return _queue(tmp_path / "many.sqlite"), _queue(tmp_path / "encoded.sqlite")


def test_encoded_rows_cross_a_pipe_and_store_what_append_many_stores(tmp_path: Path) -> None:
    stream = _stream()
    encoded = pickle.loads(pickle.dumps([encode_event(e) for e in stream]))  # as a worker sends them
    many, enc = _pair(tmp_path)
    try:
        a = many.append_many(stream)
        b = enc.append_many(encoded)
    finally:
        many.close()
        enc.close()
    assert [(r.event_id, r.sequence, bool(r.sealed_episode), r.duplicate) for r in b] == [
        (r.event_id, r.sequence, bool(r.sealed_episode), r.duplicate) for r in a
    ]
    dumped = _dump(tmp_path / "encoded.sqlite")
    assert dumped == _dump(tmp_path / "many.sqlite")
    states = {row[1]: (row[6], row[7]) for row in dumped["episodes"]}
    assert states["s7"][0] == "dead" and "unrouted" in states["s7"][1]  # the no-provider error names the profile
    with sqlite3.connect(tmp_path / "encoded.sqlite") as conn:
        open_ids = [r[0] for r in conn.execute("SELECT event_id FROM capture_events WHERE episode_id = ''")]
    assert open_ids == ["s9-u"]  # the unterminated turn stays open


def test_encoded_append_falls_back_one_by_one_for_a_session_left_open(tmp_path: Path) -> None:
    first = [_event("a-u0", "a", "prompt a 0")]
    rest = [_event("a-e0", "a", "answer a 0", terminal=True), _event("b-u0", "b", "prompt b")]
    many, enc = _pair(tmp_path)
    try:
        many.append_many(first)
        enc.append_many([encode_event(e) for e in first])
        a = many.append_many(rest)
        b = enc.append_many([encode_event(e) for e in rest])
        claims, _ = enc.claim_batch("sqlite")
        assert [c.items[0].text for c in claims] == ["prompt a 0\n\nanswer a 0"]
    finally:
        many.close()
        enc.close()
    assert [(r.sequence, bool(r.sealed_episode)) for r in b] == [(r.sequence, bool(r.sealed_episode)) for r in a]
    assert _dump(tmp_path / "encoded.sqlite")["events"] == _dump(tmp_path / "many.sqlite")["events"]


def test_encoded_append_keeps_the_stored_copy_or_refuses_a_conflict(tmp_path: Path) -> None:
    queue = _queue(tmp_path / "q.sqlite")
    try:
        queue.append_many(
            [encode_event(_event("a-u0", "a", "p")), encode_event(_event("a-e0", "a", "e", terminal=True))]
        )
        changed = [encode_event(_event("a-u0", "a", "p v2")), encode_event(_event("a-u1", "a", "next"))]
        with pytest.raises(QueueError, match="conflicts"):
            queue.append_many(changed)
        again = queue.append_many(changed, keep_existing=True)
        assert [(r.duplicate, r.sequence) for r in again] == [(True, 1), (False, 3)]
    finally:
        queue.close()


def test_encode_event_validates_as_append_does() -> None:
    with pytest.raises(QueueError, match="text is required"):
        encode_event(_event("a-x", "a", "  "))
    with pytest.raises(QueueError, match="session key"):
        encode_event(_event("a-x", " ", "text"))


def test_truncated_events_count_whether_encoded_in_a_worker_or_not(tmp_path: Path) -> None:
    # a worker-encoded row carries the bytes its text lost, so ``queue status`` counts it too
    many, enc = _pair(tmp_path)
    cut = [replace(_event(f"c-{n}", "c", f"cut {n}"), truncated_bytes=10) for n in range(2)]
    try:
        many.append_many(cut)
        enc.append_many(pickle.loads(pickle.dumps([encode_event(e) for e in cut])))
        enc.append_many([encode_event(e) for e in cut])  # duplicates are not counted again
        assert many.status().truncated == enc.status().truncated == 2
    finally:
        many.close()
        enc.close()
