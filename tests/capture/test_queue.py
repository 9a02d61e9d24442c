"""CaptureQueue: append/ack, idempotency, sealing, sequence integrity, routes, inbox draining."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _capture_helpers import event

from paxm_core.api.errors import QueueError
from paxm_core.api.types import MemoryItem
from paxm_core.capture import CaptureEvent, CaptureQueue, InboxEntry, session_key_for
from paxm_core.capture._inbox import append_raw


def rows(path: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, args).fetchall()


def test_append_commits_before_returning(open_queue, queue_path: Path) -> None:
    q = open_queue()
    result = q.append(event("evt_1"))
    assert (result.sequence, result.duplicate) == (1, False)
    # another connection sees the row at once: the ack point is COMMIT
    assert rows(queue_path, "SELECT event_id, sequence, episode_id FROM capture_events") == [("evt_1", 1, "")]
    assert stat.S_IMODE(os.stat(queue_path).st_mode) == 0o600


def test_identical_replay_is_duplicate_and_different_content_conflicts(open_queue, queue_path: Path) -> None:
    q = open_queue()
    q.append(event("evt_1", text="hello"))
    again = q.append(event("evt_1", text="hello"))
    assert again.duplicate and again.sequence == 1
    with pytest.raises(QueueError, match="conflicts with an existing event"):
        q.append(event("evt_1", text="hello, changed"))
    with pytest.raises(QueueError, match="conflicts"):
        q.append(event("evt_1", session="other", text="hello"))
    with pytest.raises(QueueError, match="conflicts"):
        q.append(event("evt_1", text="hello", terminal=True))
    assert rows(queue_path, "SELECT COUNT(*) FROM capture_events") == [(1,)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": "  "}, "text is required"),
        ({"session": ""}, "session key is required"),
        ({"source_sequence": 0}, "positive integer"),
        ({"final_sequence": -2}, "positive integer"),
    ],
)
def test_bad_events_are_rejected_and_store_nothing(open_queue, queue_path: Path, kwargs, message) -> None:
    q = open_queue()
    with pytest.raises(QueueError, match=message):
        q.append(event("evt_bad", **kwargs))
    assert rows(queue_path, "SELECT COUNT(*) FROM capture_events") == [(0,)]


def test_terminal_event_seals_only_its_own_session(open_queue, queue_path: Path) -> None:
    q = open_queue()
    q.append(event("a1", "sa"))
    q.append(event("b1", "sb"))
    q.append(event("a2", "sa"))
    result = q.append(event("a3", "sa", terminal=True))
    assert result.sealed_episode.startswith("ep_") and len(result.sealed_episode) == 35
    linked = dict(rows(queue_path, "SELECT event_id, episode_id FROM capture_events"))
    assert linked["a1"] == linked["a2"] == linked["a3"] == result.sealed_episode
    assert linked["b1"] == ""
    (payload,) = rows(queue_path, "SELECT payload_json FROM capture_episodes")[0]
    envelope = json.loads(payload)
    assert envelope["complete"] is True and len(envelope["events"]) == 3
    # the next event of the session starts a new episode, with a later sequence
    assert q.append(event("a4", "sa")).sequence == 4


def test_per_session_sequences_are_independent(open_queue) -> None:
    q = open_queue()
    assert [q.append(event(f"x{i}", "sx")).sequence for i in range(3)] == [1, 2, 3]
    assert q.append(event("y0", "sy")).sequence == 1


def test_seal_expired_uses_max_age_and_marks_incomplete(open_queue, clock, queue_path: Path) -> None:
    q = open_queue(clock=clock)
    q.append(event("old", "s_old"))
    clock.advance(30)
    q.append(event("new", "s_new"))
    clock.advance(31)
    assert q.seal_expired(60) == 1
    open_rows = rows(queue_path, "SELECT event_id FROM capture_events WHERE episode_id = ''")
    assert open_rows == [("new",)]
    (complete,) = rows(queue_path, "SELECT complete FROM capture_episodes")[0]
    assert complete == 0
    assert q.seal_all() == 1
    assert rows(queue_path, "SELECT COUNT(*) FROM capture_events WHERE episode_id = ''") == [(0,)]


def test_source_sequence_gap_is_detected(open_queue, queue_path: Path) -> None:
    q = open_queue()
    q.append(event("e1", source_sequence=1, final_sequence=3))
    q.append(event("e3", source_sequence=3, final_sequence=3, terminal=True))
    (payload, complete) = rows(queue_path, "SELECT payload_json, complete FROM capture_episodes")[0]
    envelope = json.loads(payload)
    assert envelope["missing_sequences"] == [2]
    assert complete == 0 and envelope["complete"] is False


def test_source_sequence_integrity_errors(open_queue, queue_path: Path) -> None:
    q = open_queue()
    q.append(event("e1", source_sequence=1, final_sequence=2))
    q.append(event("e1b", source_sequence=1))
    q.append(event("e5", source_sequence=5, final_sequence=2, terminal=True))
    envelope = json.loads(rows(queue_path, "SELECT payload_json FROM capture_episodes")[0][0])
    assert envelope["integrity_errors"] == ["duplicate_sequence:1", "sequence_after_final:5"]
    assert envelope["missing_sequences"] == [2]


def test_one_delivery_per_provider_with_profile_snapshot(open_queue, queue_path: Path) -> None:
    q = open_queue(routes={"default": ["sqlite", "mem0"], "ltm": ["mem0", "zep"]})
    q.append(event("e1", profile="default"))
    q.append(event("e2", profile="ltm", terminal=True))
    deliveries = rows(queue_path, "SELECT provider, profiles_json, state FROM capture_deliveries ORDER BY provider")
    assert deliveries == [
        ("mem0", '["default", "ltm"]', "pending"),
        ("sqlite", '["default"]', "pending"),
        ("zep", '["ltm"]', "pending"),
    ]


def test_mixed_profiles_give_one_item_per_profile_with_stable_ids(open_queue) -> None:
    q = open_queue(routes={"default": ["mem0"], "ltm": ["mem0"]})
    expiry = datetime(2030, 1, 1, tzinfo=UTC)
    q.append(event("e1", profile="default", text="first", metadata={"session_id": "S", "k": "1"}))
    q.append(event("e2", profile="ltm", text="second", tier="ltm", expires_at=expiry))
    q.append(event("e3", profile="default", text="third", metadata={"k": "3"}, terminal=True))
    claims, _ = q.claim_batch("mem0", limit=1)
    assert len(claims) == 1
    items = claims[0].items
    episode = claims[0].episode_id
    assert [i.text for i in items] == ["first\n\nthird", "second"]
    assert all(i.id.startswith(episode + "_") and len(i.id) == len(episode) + 13 for i in items)
    assert items[0].id != items[1].id
    assert items[0].metadata["k"] == "3" and items[0].metadata["paxm_episode_id"] == episode
    assert items[0].metadata["paxm_episode_events"] == "3"
    assert items[1].tier == "ltm" and items[1].expires_at == expiry
    assert items[0].source == "hook:episode"
    assert items[0].turn is not None and items[0].turn.session_id == "S"
    # a retry after a failure sends byte-identical ids (idempotent at ID-honouring providers)
    q.fail_many(claims[:1], "boom")
    q.make_due()
    retry, _ = q.claim_batch("mem0", limit=1)
    assert [i.id for i in retry[0].items] == [i.id for i in items]


def test_event_metadata_cannot_forge_reserved_keys(open_queue) -> None:
    q = open_queue()
    q.append(event("e1", metadata={"paxm_episode_id": "forged", "paxm_missing_sequences": "9"}, terminal=True))
    (claim,), _ = q.claim_batch("sqlite", limit=1)
    assert claim.items[0].metadata["paxm_episode_id"] == claim.episode_id
    assert "paxm_missing_sequences" not in claim.items[0].metadata


def test_profile_without_provider_is_dead_and_visible(open_queue) -> None:
    q = open_queue(routes={"default": ["sqlite"]})
    q.append(event("e1", profile="nowhere", terminal=True))
    status = q.status()
    assert status.episodes == {"dead": 1}
    assert "no write-profile provider for profile(s) nowhere" in status.dead_episodes[0][1]
    # after a config fix, retry --dead routes it again
    q.close()
    fixed = open_queue(routes={"default": ["sqlite"], "nowhere": ["mem0"]})
    assert fixed.retry_dead() == 1
    assert fixed.status().episodes == {"pending": 1} and fixed.status().deliveries == {"pending": 1}
    (claim,), _ = fixed.claim_batch("mem0", limit=1)
    assert claim.provider == "mem0" and claim.items[0].id == claim.episode_id


def test_reopen_recovers_deliveries_of_dead_owners_only(open_queue, queue_path: Path) -> None:
    first = open_queue()
    first.append(event("e1", terminal=True))
    (claim,), _ = first.claim_batch("sqlite", limit=1)
    # a second queue in the same process while the owner is alive: the lease is respected
    observer = open_queue(recover=True)
    assert observer.status().deliveries == {"delivering": 1}
    first.close()  # owner gone (like a crash): the next open returns the row to retry
    reopened = open_queue()
    assert reopened.status().deliveries == {"retry": 1}
    (again,), _ = reopened.claim_batch("sqlite", limit=1)
    assert again.attempt == 2 and again.items[0].id == claim.items[0].id


def test_lease_of_a_dead_process_is_recovered(open_queue, queue_path: Path) -> None:
    q = open_queue()
    q.append(event("e1", terminal=True))
    with sqlite3.connect(queue_path) as conn:
        conn.execute("UPDATE capture_deliveries SET state = 'delivering', lease_owner = '999999999:abc'")
    assert q.recover_delivering() == 1
    assert q.status().deliveries == {"retry": 1}


def test_backoff_doubles_to_64_seconds(open_queue) -> None:
    q = open_queue(retry_min=1.0)
    assert [q.backoff(n) for n in range(1, 10)] == [1, 2, 4, 8, 16, 32, 64, 64, 64]
    assert open_queue(retry_min=0.5).backoff(3) == 2.0


def test_status_reports_counts_and_oldest_age(open_queue, clock) -> None:
    q = open_queue(clock=clock)
    q.append(event("e1", "s1", terminal=True))
    clock.advance(5)
    q.append(event("e2", "s2"))
    clock.advance(10)
    status = q.status()
    assert status.open_events == 1
    assert status.episodes == {"pending": 1}
    assert status.deliveries == {"pending": 1}
    assert status.oldest_pending_age == pytest.approx(15, abs=0.01)
    data = status.to_json()
    assert data["open_events"] == 1 and data["dead_deliveries"] == []


def test_session_key_shapes() -> None:
    assert session_key_for("codex", workspace="/w", session_id="abc") == "codex/workspace//w/session/abc"
    assert session_key_for("claude", transcript_path="/t.jsonl") == "claude/workspace/unknown/transcript//t.jsonl"
    assert session_key_for("pi", event_id="evt_1") == "pi/workspace/unknown/event/evt_1"


# -- inbox ------------------------------------------------------------------------------


def _render(entry: InboxEntry) -> list:
    payload = json.loads(entry.raw)
    item = MemoryItem(text=payload["prompt"], created_at=entry.received_at)
    terminal = entry.event == "turn_end"
    return [CaptureEvent(entry.event_id, payload["session"], item, terminal=terminal, captured_at=entry.received_at)]


def test_drain_inbox_turns_raw_entries_into_events_in_order(open_queue, queue_path: Path) -> None:
    q = open_queue()
    append_raw(queue_path, "evt_b", "codex", "user_input", b'{"prompt": "second", "session": "S"}', 200.0)
    append_raw(queue_path, "evt_a", "codex", "user_input", b'{"prompt": "first", "session": "S"}', 100.0)
    append_raw(queue_path, "evt_c", "codex", "turn_end", b'{"prompt": "third", "session": "S"}', 300.0)
    report = q.drain_inbox(_render)
    assert (report.processed, report.events, report.failed) == (3, 3, [])
    assert rows(queue_path, "SELECT event_id FROM capture_events ORDER BY sequence") == [
        ("evt_a",),
        ("evt_b",),
        ("evt_c",),
    ]
    created = rows(queue_path, "SELECT created_at FROM capture_events ORDER BY sequence")
    assert created[0] == ("1970-01-01T00:01:40.000000Z",)
    assert q.status().episodes == {"pending": 1}
    # drained entries keep their hash: a replay from the client is recognised as a duplicate
    assert append_raw(queue_path, "evt_a", "codex", "user_input", b'{"prompt": "first", "session": "S"}') is False
    assert rows(queue_path, "SELECT state, length(raw) FROM capture_inbox WHERE event_id = 'evt_a'") == [("done", 0)]


def test_unprocessable_inbox_entry_is_kept_and_reported(open_queue, queue_path: Path) -> None:
    q = open_queue()
    append_raw(queue_path, "evt_bad", "codex", "user_input", b"not json", 100.0)
    append_raw(queue_path, "evt_ok", "codex", "user_input", b'{"prompt": "fine", "session": "S"}', 200.0)
    report = q.drain_inbox(_render)
    assert report.processed == 1 and [e for e, _ in report.failed] == ["evt_bad"]
    assert rows(queue_path, "SELECT state, raw FROM capture_inbox WHERE event_id = 'evt_bad'") == [
        ("failed", b"not json")
    ]
    status = q.status()
    assert status.inbox == {"done": 1, "failed": 1}
    assert status.failed_inbox[0][0] == "evt_bad"
    # a later fix of the renderer can process it: nothing was lost
    fixed = q.drain_inbox(
        lambda e: _render(InboxEntry(e.event_id, e.target, e.event, b'{"prompt": "x", "session": "S"}', e.received_at)),
        include_failed=True,
    )
    assert fixed.processed == 1 and q.status().inbox == {"done": 2}


def test_tampered_inbox_entry_is_not_processed(open_queue, queue_path: Path) -> None:
    q = open_queue()
    append_raw(queue_path, "evt_t", "codex", "user_input", b'{"prompt": "mine", "session": "S"}', 100.0)
    with sqlite3.connect(queue_path) as conn:
        conn.execute("UPDATE capture_inbox SET raw = ?", (b'{"prompt": "evil", "session": "S"}',))
    seen: list[str] = []
    report = q.drain_inbox(lambda e: seen.append(e.event_id) or [])
    assert seen == [] and "checksum mismatch" in report.failed[0][1]


def test_inbox_entry_rolled_back_when_an_event_is_rejected(open_queue, queue_path: Path) -> None:
    q = open_queue()
    q.append(event("evt_x", text="original"))
    append_raw(queue_path, "evt_x", "codex", "user_input", b'{"prompt": "different", "session": "s1"}', 100.0)
    report = q.drain_inbox(_render)
    assert "conflicts with an existing event" in report.failed[0][1]
    assert rows(queue_path, "SELECT COUNT(*) FROM capture_events") == [(1,)]


def test_queue_file_errors_are_queue_errors(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(QueueError):
        CaptureQueue(blocker / "q.sqlite")


def test_timestamps_sort_as_text() -> None:
    from paxm_core.capture._inbox import utc_stamp

    base = 1_700_000_000.0
    stamps = [utc_stamp(base + d) for d in (0, 0.1, 0.000001, 1, 10.5)]
    assert sorted(stamps) == [utc_stamp(base + d) for d in sorted((0, 0.1, 0.000001, 1, 10.5))]
    assert len({len(s) for s in stamps}) == 1
    assert datetime.strptime(stamps[3], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC) == datetime.fromtimestamp(
        base, UTC
    ) + timedelta(seconds=1)


def test_not_a_database_and_closed_queue_are_queue_errors(tmp_path: Path, open_queue) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a sqlite file" * 100)
    # issue 13: a corrupt queue is moved aside (kept, timestamped) and a fresh one is created
    healed = CaptureQueue(garbage)
    healed.close()
    (kept,) = tmp_path.glob("garbage.sqlite.corrupt-*")
    assert kept.read_bytes().startswith(b"this is not a sqlite file")
    q = open_queue()
    q.close()
    with pytest.raises(QueueError, match="closed"):
        q.append(event("e1"))
    with pytest.raises(QueueError, match="closed"):
        q.status()


def test_prune_removes_only_old_delivered_work(open_queue, clock, queue_path: Path) -> None:
    q = open_queue(routes={"default": ["a"]}, clock=clock, max_attempts=1)
    q.append(event("old", "s1", terminal=True))
    q.append(event("dead", "s2", terminal=True))
    append_raw(queue_path, "raw_done", "codex", "user_input", b'{"prompt": "x", "session": "s3"}', clock.now)
    q.drain_inbox(_render)
    claims, _ = q.claim_batch("a")
    by_event = {c.items[0].text: c for c in claims}
    q.complete_many([by_event["text of old"]], ["ref-old"])
    q.fail_many([by_event["text of dead"]], "boom")  # max_attempts=1: dead
    clock.advance(8 * 24 * 3600)
    q.append(event("new", "s4", terminal=True))
    assert q.prune(7 * 24 * 3600) == 1
    remaining = {r[0] for r in rows(queue_path, "SELECT event_id FROM capture_events")}
    assert remaining == {"dead", "raw_done", "new"}
    assert rows(queue_path, "SELECT COUNT(*) FROM capture_inbox") == [(0,)]
    status = q.status()
    assert status.episodes == {"dead": 1, "pending": 1} and status.open_events == 1
    assert status.providers == {"a": {"dead": 1, "pending": 1}}


def test_upgrade_from_schema_1_backfills_delivery_positions(open_queue, queue_path: Path) -> None:
    q = open_queue(routes={"default": ["a"]})
    q.append(event("e1", "s1", terminal=True))
    q.append(event("e2", "s1", terminal=True))
    q.close()
    with sqlite3.connect(queue_path) as conn:  # turn the file back into a schema-1 queue
        conn.execute("DROP INDEX capture_deliveries_heads")
        conn.execute("DROP INDEX capture_deliveries_due")  # m003 indexes a column m002 added
        conn.execute("DELETE FROM _paxm_migrations WHERE name = 'm003_delivery_due_order'")
        for column in ("session_key", "first_sequence", "episode_created_at"):
            conn.execute(f"ALTER TABLE capture_deliveries DROP COLUMN {column}")
        conn.execute("DELETE FROM _paxm_migrations WHERE name = 'm002_delivery_heads'")
        conn.execute("PRAGMA user_version = 1")
    upgraded = open_queue(routes={"default": ["a"]})
    assert rows(queue_path, "SELECT session_key, first_sequence FROM capture_deliveries ORDER BY first_sequence") == [
        ("s1", 1),
        ("s1", 2),
    ]
    (claim,), _ = upgraded.claim_batch("a", limit=1)  # a claim of one: the head of the session
    assert claim.items[0].text == "text of e1"


def test_concurrent_drains_process_each_entry_once(open_queue, queue_path: Path) -> None:
    first = open_queue()
    second = open_queue()
    append_raw(queue_path, "evt_r", "codex", "user_input", b'{"prompt": "once", "session": "S"}', 100.0)
    calls: list[str] = []

    def racing(entry: InboxEntry) -> list:
        calls.append("first")
        # another drainer (say, a daemon that just started) takes the same entry meanwhile
        assert second.drain_inbox(lambda e: calls.append("second") or _render(e)).processed == 1
        return _render(entry)

    report = first.drain_inbox(racing)
    assert calls == ["first", "second"]
    assert report.failed == [] and report.processed == 0
    assert rows(queue_path, "SELECT event_id, state FROM capture_inbox") == [("evt_r", "done")]
    assert rows(queue_path, "SELECT COUNT(*) FROM capture_events") == [(1,)]
