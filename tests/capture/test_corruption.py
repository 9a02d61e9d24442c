"""Tampered payloads are detected by checksum, reported, and never reach a provider."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _capture_helpers import FakeProvider, Recorder, event

from paxm_core.capture import DeliveryWorker
from paxm_core.capture._inbox import sha256_hex
from paxm_core.capture.episode import canonical_json


def execute(path: Path, sql: str, *args: object) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(sql, args)


def one(path: Path, sql: str, *args: object) -> Any:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, args).fetchone()


def _sealed(open_queue: Any) -> Any:
    q = open_queue(routes={"default": ["mem0"]})
    q.append(event("e1", text="the user said hello"))
    q.append(event("e2", text="the assistant answered", terminal=True))
    return q


def _tamper_event_text(path: Path, *, rehash: bool) -> None:
    (payload,) = one(path, "SELECT payload_json FROM capture_events WHERE event_id = 'e1'")
    data = json.loads(payload)
    data["item"]["text"] = "rm -rf / (injected)"
    text = canonical_json(data)
    if rehash:
        execute(
            path,
            "UPDATE capture_events SET payload_json = ?, payload_hash = ? WHERE event_id = 'e1'",
            text,
            sha256_hex(text.encode()),
        )
    else:
        execute(path, "UPDATE capture_events SET payload_json = ? WHERE event_id = 'e1'", text)


def _tamper_episode_text(path: Path, *, rehash: bool) -> None:
    (payload,) = one(path, "SELECT payload_json FROM capture_episodes")
    data = json.loads(payload)
    data["events"][0]["item"]["text"] = "rm -rf / (injected)"
    text = canonical_json(data)
    if rehash:
        execute(path, "UPDATE capture_episodes SET payload_json = ?, payload_hash = ?", text, sha256_hex(text.encode()))
    else:
        execute(path, "UPDATE capture_episodes SET payload_json = ?", text)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (lambda p: _tamper_event_text(p, rehash=False), "event 1 checksum mismatch"),
        # an attacker who also fixes the event's own hash still breaks the episode checksum
        (lambda p: _tamper_event_text(p, rehash=True), "event 1 does not match its checksum"),
        (lambda p: _tamper_episode_text(p, rehash=False), "envelope checksum mismatch"),
        (lambda p: _tamper_episode_text(p, rehash=True), "event 1 does not match its checksum"),
        (lambda p: execute(p, "UPDATE capture_episodes SET payload_json = '{'"), "envelope checksum mismatch"),
        (lambda p: execute(p, "DELETE FROM capture_events WHERE event_id = 'e1'"), "event count mismatch"),
        (lambda p: execute(p, "UPDATE capture_deliveries SET profiles_json = 'oops'"), "payload is invalid"),
    ],
)
def test_tampered_payload_is_quarantined_and_reported(
    open_queue, make_router, queue_path: Path, tamper: Any, message: str
) -> None:
    q = _sealed(open_queue)
    tamper(queue_path)
    provider = FakeProvider("mem0")
    telemetry = Recorder()
    outcomes = DeliveryWorker(q, make_router(provider), telemetry=telemetry).run_once()
    assert provider.calls == 0  # never delivered
    assert [(o.state, message in o.error) for o in outcomes] == [("dead", True)]
    status = q.status()
    assert status.deliveries == {"dead": 1} and status.episodes == {"dead": 1}
    assert message in status.dead[0].last_error
    assert telemetry.events[0]["hook_event"] == "delivery_dead" and message in telemetry.events[0]["error"]
    # reviving does not launder it: the integrity check runs again
    assert q.retry_dead() == 1
    DeliveryWorker(q, make_router(provider)).run_once()
    assert provider.calls == 0 and q.status().deliveries == {"dead": 1}


def test_event_tampered_before_sealing_is_never_delivered(open_queue, make_router, queue_path: Path) -> None:
    q = open_queue(routes={"default": ["mem0"]})
    q.append(event("e1", text="the user said hello"))
    _tamper_event_text(queue_path, rehash=False)
    q.append(event("e2", text="the assistant answered", terminal=True))
    status = q.status()
    assert status.episodes == {"dead": 1}
    assert "capture event e1: payload checksum mismatch" in status.dead_episodes[0][1]
    assert status.deliveries == {"dead": 1}
    provider = FakeProvider("mem0")
    DeliveryWorker(q, make_router(provider)).run_once()
    q.retry_dead()
    DeliveryWorker(q, make_router(provider)).run_once()
    assert provider.calls == 0
    # later events of the session are not held hostage by the corrupt episode
    q.append(event("e3", text="next turn", terminal=True))
    DeliveryWorker(q, make_router(provider)).run_once()
    assert [i.text for i in provider.puts] == ["next turn"]
