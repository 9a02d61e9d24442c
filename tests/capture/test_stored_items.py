"""Items stored at seal time (``capture_episode_items``) are exactly what rendering gives.

A claim decodes an episode's stored items instead of rendering its envelope again, but only
while the envelope and event texts still hash to what the items were bound to; otherwise (no
stored row: a queue written before ``m005_episode_items``, another route snapshot, a changed
text or row) it renders and verifies as before.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from _capture_helpers import FakeProvider, event
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.capture import CaptureEvent, CaptureQueue, DeliveryWorker, _inbox
from paxm_core.capture.episode import decode_stored_item, encode_stored_item, episode_items
from paxm_core.capture.queue import encode_event
from paxm_core.types import MemoryItem, MemoryOrigin, MemoryScope, Provenance, TurnContext

ROUTES = {"default": ["a", "b"], "work": ["b"], "solo": ["c"]}
_ITEMS = "SELECT episode_id, items_json, items_hash FROM capture_episode_items ORDER BY episode_id"


def _rows(path: Path, sql: str, *args: Any) -> list[Any]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, args).fetchall()


def _execute(path: Path, sql: str, *args: Any) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(sql, args)


def _claimed(q: CaptureQueue, provider: str) -> list[tuple[Any, ...]]:
    """Every due delivery of ``provider`` claimed and released again: what a worker would send."""
    claims, dead = q.claim_batch(provider, limit=1000)
    assert dead == []
    q.release_many(claims)
    return [(c.episode_id, c.profiles, c.items, c.capture_times) for c in claims]


def _exactly(claimed: list[tuple[Any, ...]]) -> list[Any]:
    # == on items compares datetimes by instant and dicts unordered: also the zone and key order
    return [
        (episode, profiles, items, times, [repr(i) for i in items], [list(i.metadata) for i in items])
        for episode, profiles, items, times in claimed
    ]


_text = st.sampled_from(["plain", 'quote " it', "back\\slash", "ünïcødé ✓", "tab\tnew\nline", "", "  ", "x"])
_zone = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8)), None])
_when = st.one_of(
    st.none(),
    st.builds(
        lambda seconds, micros, zone: datetime(2026, 1, 2, 3, 4, 5, micros, tzinfo=zone) + timedelta(seconds=seconds),
        st.integers(-100_000, 100_000),
        st.sampled_from([0, 1, 120_000, 999_999]),
        _zone,
    ),
)
_metadata = st.dictionaries(
    st.sampled_from(["k", "zeta", "alpha", "session_id", "turn_id", "paxm_episode_id", "ü"]), _text, max_size=4
)
_item = st.builds(
    MemoryItem,
    text=_text,
    metadata=_metadata,
    created_at=_when,
    tier=st.sampled_from(["", "stm", "ltm"]),
    expires_at=st.one_of(st.none(), st.just(datetime(2027, 1, 1, tzinfo=UTC))),
    origin=st.sampled_from([MemoryOrigin(), MemoryOrigin(user_id="u1", turn_id="t")]),
    scope=st.sampled_from([MemoryScope(), MemoryScope(type="repo", id="r1")]),
    provenance=st.sampled_from([Provenance(), Provenance(agent_id="a1", scope_id="s")]),
    admission_text=st.sampled_from(["", " ", "admit this"]),
)
_turn = st.lists(st.tuples(_item, st.sampled_from(["default", "default", "work", "solo", "unrouted"])), min_size=1)


def _events(turns: list[list[tuple[MemoryItem, str]]]) -> list[CaptureEvent]:
    out: list[CaptureEvent] = []
    for n, turn in enumerate(turns):
        session = f"s{n % 2}"
        for m, (item, profile) in enumerate(turn):
            last = m == len(turn) - 1
            if not last and not item.text.strip():
                item = item.replace(text="open events need text")
            out.append(CaptureEvent(f"e{n}.{m}", session, item, profile, terminal=last))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(_turn, min_size=1, max_size=4), how=st.sampled_from(["append", "append_many", "append_encoded"]))
def test_stored_items_are_the_rendered_items(turns: list[list[tuple[MemoryItem, str]]], how: str) -> None:
    events = _events(turns)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "q.sqlite"
        with CaptureQueue(path, routes=ROUTES) as q:
            if how == "append":
                for e in events:
                    q.append(e)
            elif how == "append_many":
                q.append_many(events)
            else:
                q.append_encoded([encode_event(e) for e in events])
            owed = {r[0] for r in _rows(path, "SELECT episode_id FROM capture_deliveries WHERE state = 'pending'")}
            stored = {r[0] for r in _rows(path, _ITEMS)}
            assert stored <= owed
            fast = {p: _claimed(q, p) for p in ("a", "b", "c")}
            # every claimed episode was sent from its stored items...
            assert {e for claims in fast.values() for e, *_ in claims} <= stored
            # ...which are what rendering the envelope gives, for each route snapshot
            for claims in fast.values():
                for episode_id, profiles, items, _ in claims:
                    ((payload,),) = _rows(
                        path, "SELECT payload_json FROM capture_episodes WHERE episode_id = ?", episode_id
                    )
                    rendered = episode_items(json.loads(payload), profiles)
                    assert [repr(i) for i in items] == [repr(i) for i in rendered]
            _execute(path, "DELETE FROM capture_episode_items")
            slow = {p: _claimed(q, p) for p in ("a", "b", "c")}
        assert {p: _exactly(c) for p, c in fast.items()} == {p: _exactly(c) for p, c in slow.items()}


def test_stored_item_form_round_trips_every_field() -> None:
    when = datetime(2026, 5, 6, 7, 8, 9, 10, tzinfo=timezone(timedelta(hours=2)))
    items = [
        MemoryItem(text="t"),
        MemoryItem(
            "text",
            "ep_1",
            "hook:episode",
            {"z": "1", "a": "2"},
            when,
            "ltm",
            datetime(2027, 1, 1),
            MemoryOrigin("u", "a", "s", "t"),
            MemoryScope("team", "x"),
            Provenance("u", "a", "team", "x"),
            "admit",
            TurnContext("s", "t", when, None),
        ),
    ]
    for item in items:
        back = decode_stored_item(json.loads(json.dumps(encode_stored_item(item))))
        assert repr(back) == repr(item) and back == item and list(back.metadata) == list(item.metadata)
        assert back.admission_text == item.admission_text and back.turn == item.turn


@pytest.mark.parametrize(
    "row",
    [
        [],
        ["t"] * 12,
        ["t", "", "", {"k": 1}, None, "", None, [], [], [], "", None],
        ["t", "", "", {}, None, "", None, ["only one"], [], [], "", None],
        ["t", "", "", {}, 5, "", None, [], [], [], "", None],
        ["t", "", "", {}, None, "", None, [], [], [], "", ["s", "t", None]],
        [7, "", "", {}, None, "", None, [], [], [], "", None],
    ],
)
def test_a_stored_item_of_another_shape_is_refused(row: list[Any]) -> None:
    with pytest.raises((TypeError, ValueError)):
        decode_stored_item(row)


def _sealed(q: CaptureQueue, n: int = 3) -> None:
    for i in range(n):
        q.append(event(f"u{i}", f"s{i % 2}", f"prompt {i}"))
        q.append(event(f"e{i}", f"s{i % 2}", f"answer {i}", terminal=True))


def _deliver(q: CaptureQueue, make_router: Any) -> FakeProvider:
    provider = FakeProvider("sqlite")
    DeliveryWorker(q, make_router(provider), batch_size=10).flush(timeout=30)
    return provider


def _to_schema_4(path: Path) -> None:
    """Undo m005 exactly: a queue as paxm wrote it before items were stored."""
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TRIGGER capture_episode_items_gone")
        conn.execute("DROP TABLE capture_episode_items")
        conn.execute("DELETE FROM _paxm_migrations WHERE name = 'm005_episode_items'")
        conn.execute("PRAGMA user_version = 4")


def test_a_queue_from_before_the_migration_delivers_everything(
    open_queue: Any, make_router: Any, queue_path: Path
) -> None:
    assert [name for name, _ in _inbox.MIGRATIONS][4] == "m005_episode_items"
    q = open_queue()
    _sealed(q)
    expected = {c[0]: c for c in _claimed(q, "sqlite")}
    q.close()
    _to_schema_4(queue_path)
    upgraded = open_queue()
    assert _rows(queue_path, "PRAGMA user_version") == [(_inbox.SCHEMA_VERSION,)]
    assert _rows(queue_path, _ITEMS) == []  # the old episodes have no stored items...
    assert {c[0]: c for c in _claimed(upgraded, "sqlite")} == expected  # ...and render as before
    upgraded.append(event("u9", "s9", "after the upgrade"))
    upgraded.append(event("e9", "s9", "stored", terminal=True))
    assert len(_rows(queue_path, _ITEMS)) == 1
    provider = _deliver(upgraded, make_router)
    assert sorted(i.text for i in provider.puts) == sorted(
        [f"prompt {i}\n\nanswer {i}" for i in range(3)] + ["after the upgrade\n\nstored"]
    )
    assert upgraded.status().deliveries == {"delivered": 4}


def test_the_migration_is_idempotent_and_all_or_nothing(queue_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    CaptureQueue(queue_path).close()
    _to_schema_4(queue_path)
    name, statements = _inbox.MIGRATIONS[4]
    # a failure inside m005 (a crash has the same effect: the transaction never commits)
    broken = [*_inbox.MIGRATIONS[:4], (name, [*statements, "INSERT INTO no_such_table VALUES (1)"])]
    monkeypatch.setattr(_inbox, "MIGRATIONS", broken)
    with pytest.raises(sqlite3.OperationalError):
        _inbox.connect(queue_path).close()
    assert _rows(queue_path, "SELECT name FROM sqlite_master WHERE name LIKE 'capture_episode_items%'") == []
    assert _rows(queue_path, "PRAGMA user_version") == [(4,)]
    monkeypatch.undo()
    _inbox.connect(queue_path).close()
    with sqlite3.connect(queue_path) as conn:
        # applied once; its statements run again on the finished schema change nothing
        for statement in statements:
            conn.execute(statement)
        assert conn.execute("SELECT count(*) FROM _paxm_migrations WHERE name = ?", (name,)).fetchone() == (1,)
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'capture_episode_items%'")}
    assert names == {"capture_episode_items", "capture_episode_items_gone"}
    with CaptureQueue(queue_path, routes={"default": ["sqlite"]}) as q:
        _sealed(q, 1)
        assert len(_rows(queue_path, _ITEMS)) == 1


@pytest.mark.parametrize(
    "change",
    [
        # altered text (its hash no longer matches), rehashed alone, a row of another episode
        "UPDATE capture_episode_items SET items_json = replace(items_json, 'answer', 'INJECTED')",
        "UPDATE capture_episode_items SET items_hash = 'x'",
        "UPDATE capture_episode_items SET items_json = (SELECT items_json FROM capture_episode_items"
        " ORDER BY episode_id DESC LIMIT 1), items_hash = (SELECT items_hash FROM capture_episode_items"
        " ORDER BY episode_id DESC LIMIT 1)",
        "UPDATE capture_episode_items SET items_json = '[', items_hash = 'y'",
    ],
)
def test_altered_stored_items_are_never_sent(open_queue: Any, make_router: Any, queue_path: Path, change: str) -> None:
    q = open_queue()
    _sealed(q)
    _execute(queue_path, change)
    provider = _deliver(q, make_router)
    assert sorted(i.text for i in provider.puts) == sorted(f"prompt {i}\n\nanswer {i}" for i in range(3))
    assert all(i.id == i.metadata["paxm_episode_id"] for i in provider.puts)


def test_a_changed_event_text_is_still_caught_with_items_stored(
    open_queue: Any, make_router: Any, queue_path: Path
) -> None:
    q = open_queue()
    _sealed(q, 1)
    _execute(queue_path, "UPDATE capture_events SET payload_json = replace(payload_json, 'answer', 'INJECTED')")
    outcomes = DeliveryWorker(q, make_router(FakeProvider("sqlite"))).run_once()
    assert [(o.state, "event 2 checksum mismatch" in o.error) for o in outcomes] == [("dead", True)]


def test_forgotten_and_pruned_episodes_take_their_items(
    open_queue: Any, make_router: Any, clock: Any, queue_path: Path
) -> None:
    q = open_queue(clock=clock)
    _sealed(q)
    assert len(_rows(queue_path, _ITEMS)) == 3
    (copy,) = q.queued_copies(query="prompt 1")
    assert q.forget_copies([copy]) == 1
    assert copy.id not in {r[0] for r in _rows(queue_path, _ITEMS)}
    _deliver(q, make_router)
    clock.advance(8 * 24 * 3600)
    assert q.prune(7 * 24 * 3600) == 2
    assert _rows(queue_path, _ITEMS) == []
