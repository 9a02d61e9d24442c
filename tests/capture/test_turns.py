"""Turn integrity at the queue: flush never splits a live turn; every turn end seals its turn."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from _capture_helpers import FakeProvider, event

from paxm_core.api.errors import QueueError
from paxm_core.capture import DeliveryWorker


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


def test_flush_delivers_what_is_sealed_and_leaves_a_live_turn_whole(open_queue, make_router, queue_path) -> None:
    sink = FakeProvider("sqlite")
    q = open_queue(routes={"default": ["sqlite"]})
    q.append(event("p1", "s1", "prompt one"))
    q.append(event("a1", "s1", "answer one", terminal=True))
    q.append(event("p2", "s1", "prompt two"))  # turn two is live: no turn end yet
    worker = DeliveryWorker(q, make_router(sink))
    report = worker.flush(timeout=10)
    assert report.ok and report.sealed == 0 and report.delivered == 1 and report.remaining == 0
    assert report.live == 1 and report.to_json()["live"] == 1
    assert [i.text for i in sink.puts] == ["prompt one\n\nanswer one"]
    assert _rows(queue_path, "SELECT event_id FROM capture_events WHERE episode_id = ''") == [("p2",)]
    # the turn ends after the flush: it is delivered whole
    q.append(event("a2", "s1", "answer two", terminal=True))
    assert worker.flush(timeout=10).ok
    assert [i.text for i in sink.puts][-1] == "prompt two\n\nanswer two"


def test_flush_with_seal_open_seals_live_turns_incomplete(open_queue, make_router) -> None:
    sink = FakeProvider("sqlite")
    q = open_queue(routes={"default": ["sqlite"]})
    q.append(event("p1", "s1", "prompt one"))
    report = DeliveryWorker(q, make_router(sink)).flush(timeout=10, seal_open=True)
    assert report.ok and report.sealed == 1 and report.live == 0
    assert [i.text for i in sink.puts] == ["prompt one"]
    assert sink.puts[0].metadata["paxm_episode_complete"] == "false"


def test_flush_seals_a_stale_turn_by_age(open_queue, make_router, clock) -> None:
    from paxm_core.config.model import CaptureQueueConfig

    sink = FakeProvider("sqlite")
    q = open_queue(routes={"default": ["sqlite"]}, clock=clock)
    q.append(event("p1", "s1", "abandoned prompt"))
    clock.advance(61)  # older than max_episode_age: its turn end is not coming
    report = DeliveryWorker(q, make_router(sink), CaptureQueueConfig(max_episode_age=60.0)).flush(timeout=10)
    assert report.ok and report.sealed == 1 and report.live == 0
    assert [i.text for i in sink.puts] == ["abandoned prompt"]


def test_a_turn_end_without_text_seals_its_turn(open_queue, make_router, queue_path) -> None:
    sink = FakeProvider("sqlite")
    q = open_queue(routes={"default": ["sqlite"]})
    q.append(event("p1", "s1", "prompt one"))
    sealed = q.append(event("t1", "s1", "", terminal=True))  # Stop after a tool call: no text
    assert sealed.sealed_episode
    q.append(event("p2", "s1", "prompt two"))
    q.append(event("a2", "s1", "answer two", terminal=True))
    assert DeliveryWorker(q, make_router(sink)).flush(timeout=10).ok
    assert [i.text for i in sink.puts] == ["prompt one", "prompt two\n\nanswer two"]
    assert {i.metadata["paxm_episode_complete"] for i in sink.puts} == {"true"}
    # a replayed marker is an idempotent duplicate, not a second seal
    assert q.append(event("t1", "s1", "", terminal=True)).duplicate


def test_a_bare_turn_end_makes_an_episode_with_nothing_to_deliver(open_queue, make_router, queue_path) -> None:
    sink = FakeProvider("sqlite")
    q = open_queue(routes={"default": ["sqlite"]})
    q.append(event("t1", "s1", "", terminal=True))
    assert _rows(queue_path, "SELECT state, error FROM capture_episodes") == [("delivered", "")]
    assert _rows(queue_path, "SELECT COUNT(*) FROM capture_deliveries") == [(0,)]
    report = DeliveryWorker(q, make_router(sink)).flush(timeout=5)
    assert report.ok and sink.puts == []
    assert q.status().dead_episodes == []


def test_only_a_turn_end_may_be_empty(open_queue) -> None:
    q = open_queue()
    with pytest.raises(QueueError, match="text is required"):
        q.append(event("p1", "s1", "  "))
