"""Delivery in batches (``deliver_stream``): claim a batch, write it, record it, repeat.

Per-session order must hold across batches as within one: a batch is claimed only after the
one before it is recorded, a claim never takes a session's episode behind one that is leased
or waiting for a retry, and a stopped stream leaves nothing leased.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _capture_helpers import turns

from paxm_core import Deadline, MemoryItem, MemoryRef
from paxm_core.api.errors import ProviderError
from paxm_core.capture import CaptureQueue, DeliveryWorker
from paxm_core.capture.batch import deliver_stream
from paxm_core.router import Router


def _turns(session: str, count: int) -> list[Any]:
    """Turns numbered ``000``, ``001``...: their texts sort in turn order."""
    return turns(session, count, width=3)


class Recorder:
    """ID-honouring in-memory provider with ``put_batch``; logs every write in order.

    ``fail_twice`` texts fail their first two writes (the batch write, then the one-by-one
    retry of that episode: a transient provider error); ``gate``, when
    set, holds each batch write until the test lets it go.
    """

    def __init__(self, fail_twice: Sequence[str] = ()) -> None:
        self.stored: dict[str, str] = {}
        self.log: list[str] = []
        self.batches: list[list[str]] = []
        self._fail = dict.fromkeys(fail_twice, 2)
        self.gate: threading.Event | None = None
        self.writing = threading.Event()

    @property
    def name(self) -> str:
        return "rec"

    def health(self, deadline: Deadline) -> None:
        return None

    def search(self, query: Any, deadline: Deadline) -> list[Any]:
        return []

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        return self.put_batch([item], deadline)[0]

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        self.writing.set()
        if self.gate is not None:
            assert self.gate.wait(30)
        for item in items:
            hit = next((word for word in self._fail if word in item.text), None)
            if hit is not None:
                self._fail[hit] -= 1
                if not self._fail[hit]:
                    del self._fail[hit]
                raise ProviderError("rec", "put", "transient failure")
        self.batches.append([i.text.split()[2] + i.text.split()[1] for i in items])
        for item in items:
            self.stored[item.id] = item.text
            self.log.append(item.text)
        return [MemoryRef("rec", i.id) for i in items]


def _interleaved(*sessions: list[Any]) -> list[Any]:
    # turn by turn, so the sessions' episodes are sealed alternately (claims go oldest first)
    turns = [list(zip(s[::2], s[1::2], strict=True)) for s in sessions]
    return [e for turn in zip(*turns, strict=True) for pair in turn for e in pair]


def _positions(log: list[str], session: str) -> list[int]:
    return [int(text.split()[2]) for text in log if text.split()[1] == session]


def test_a_claim_never_takes_a_sessions_episodes_behind_its_in_flight_ones(tmp_path: Path) -> None:
    queue = CaptureQueue(tmp_path / "q.sqlite", routes={"default": ["rec"]})
    queue.append_many(_turns("a", 8) + _turns("b", 8))
    first, _ = queue.claim_batch("rec", limit=6)
    assert [(c.session_key, c.items[0].text.split()[2]) for c in first] == [("a", f"{n:03d}") for n in range(6)]
    # a's later episodes wait behind its six leases (and do not use up the limit); b has none
    # in flight
    following, _ = queue.claim_batch("rec", limit=6)
    assert [(c.session_key, c.items[0].text.split()[2]) for c in following] == [("b", f"{n:03d}") for n in range(6)]
    # another queue (another process's worker) may not take them either
    other = CaptureQueue(tmp_path / "q.sqlite", routes={"default": ["rec"]})
    try:
        assert other.claim_batch("rec", limit=6)[0] == []
    finally:
        other.close()
    queue.complete_many(first, [c.episode_id for c in first])
    rest, _ = queue.claim_batch("rec", limit=6)
    assert [(c.session_key, c.items[0].text.split()[2]) for c in rest] == [("a", "006"), ("a", "007")]
    queue.close()


def test_a_claim_takes_the_oldest_takeable_episodes_and_a_claim_of_one_looks_past_blocked_sessions(
    tmp_path: Path,
) -> None:
    queue = CaptureQueue(tmp_path / "q.sqlite", routes={"default": ["rec"]})
    queue.append_many(_interleaved(_turns("a", 6), _turns("b", 6)))
    first, _ = queue.claim_batch("rec", limit=4)
    # oldest first across sessions, each session's share a prefix of its own
    assert [(c.session_key, c.items[0].text.split()[2]) for c in first] == [
        ("a", "000"),
        ("a", "001"),
        ("b", "000"),
        ("b", "001"),
    ]
    queue.close()
    # all of a's episodes are older than b's: a batch of one looks past a's, behind its lease
    queue = CaptureQueue(tmp_path / "q2.sqlite", routes={"default": ["rec"]})
    queue.append_many(_turns("a", 6) + _turns("b", 6))
    (head,), _ = queue.claim_batch("rec", limit=1)
    (one,), _ = queue.claim_batch("rec", limit=1)
    assert [(c.session_key, c.items[0].text.split()[2]) for c in (head, one)] == [("a", "000"), ("b", "000")]
    assert queue.claim_batch("rec", limit=1)[0] == []
    queue.close()


def test_a_failed_episode_holds_back_the_rest_of_its_session(tmp_path: Path) -> None:
    provider = Recorder(fail_twice=["a 001 fine"])
    # the retry of a's episode 1 must not fall due inside the stream however slowly the
    # machine runs (at 0.05 s it did under CI load): it waits 30 s, and the queue's clock
    # jumps an hour ahead before the flush below
    ahead = [0.0]
    queue = CaptureQueue(
        tmp_path / "q.sqlite", routes={"default": ["rec"]}, retry_min=30, clock=lambda: time.time() + ahead[0]
    )
    queue.append_many(_interleaved(_turns("a", 8), _turns("b", 8)))
    router = Router({"rec": provider})
    seen: list[tuple[str, str]] = []
    try:
        attempted = deliver_stream(
            queue,
            "rec",
            lambda _batch: lambda items: router.put_to_provider("rec", items, 30.0),
            lambda outcomes, _batch: seen.extend((o.episode_id, o.state) for o in outcomes),
            limit=4,
        )
        assert attempted == len(seen) >= 6
        # a's episode 1 failed (retry, backed off); a's later episodes were never sent ahead,
        # and no attempt was counted on them; b went on, in order
        assert _positions(provider.log, "a") == [0]
        b = _positions(provider.log, "b")
        assert b == list(range(len(b))) and len(b) >= 4
        with sqlite3.connect(queue.path) as conn:
            rows = conn.execute(
                "SELECT state, attempts FROM capture_deliveries WHERE session_key = 'a' ORDER BY first_sequence"
            ).fetchall()
        assert rows[0] == ("delivered", 1) and rows[1][0] == "retry"
        assert {state for state, _ in rows[2:]} == {"pending"}  # never leased: no attempt counted
        assert {attempts for _, attempts in rows[2:]} == {0}
        # once the retry is due, the session drains in order
        ahead[0] = 3600.0
        report = DeliveryWorker(queue, router, batch_size=4).flush(timeout=30)
        assert report.ok, report
        assert _positions(provider.log, "a") == list(range(8))
        assert len(provider.stored) == 16
    finally:
        router.close()
        queue.close()


def test_stopping_ends_the_stream_after_the_batch_in_hand(tmp_path: Path) -> None:
    provider = Recorder()
    provider.gate = threading.Event()
    queue = CaptureQueue(tmp_path / "q.sqlite", routes={"default": ["rec"]})
    queue.append_many(_turns("a", 10))
    router = Router({"rec": provider})
    stop = threading.Event()
    try:
        runner = threading.Thread(
            target=deliver_stream,
            args=(
                queue,
                "rec",
                lambda _batch: lambda items: router.put_to_provider("rec", items, 30.0),
                lambda outcomes, _batch: None,
            ),
            kwargs={"limit": 3, "stopping": stop.is_set},
        )
        runner.start()
        assert provider.writing.wait(10)
        with sqlite3.connect(queue.path) as conn:
            leased = conn.execute("SELECT COUNT(*) FROM capture_deliveries WHERE state = 'delivering'").fetchone()
        assert leased[0] == 3  # only the batch being written is leased
        stop.set()
        provider.gate.set()
        runner.join(30)
        assert not runner.is_alive()
        with sqlite3.connect(queue.path) as conn:
            states = dict(conn.execute("SELECT state, COUNT(*) FROM capture_deliveries GROUP BY state").fetchall())
            attempts = conn.execute("SELECT SUM(attempts) FROM capture_deliveries").fetchone()[0]
        assert states == {"delivered": 3, "pending": 7}
        assert attempts == 3
        assert _positions(provider.log, "a") == [0, 1, 2]
    finally:
        router.close()
        queue.close()


def test_each_batch_is_recorded_before_the_next_is_claimed(tmp_path: Path) -> None:
    provider = Recorder()
    queue = CaptureQueue(tmp_path / "q.sqlite", routes={"default": ["rec"]})
    queue.append_many(_interleaved(_turns("a", 6), _turns("b", 6)))
    router = Router({"rec": provider})
    leased_at_claim: list[int] = []
    claim_batch = queue.claim_batch

    def checked_claim_batch(provider: str, *, limit: int = 500) -> Any:
        with sqlite3.connect(queue.path) as conn:
            row = conn.execute("SELECT COUNT(*) FROM capture_deliveries WHERE state = 'delivering'").fetchone()
        leased_at_claim.append(row[0])
        return claim_batch(provider, limit=limit)

    queue.claim_batch = checked_claim_batch  # type: ignore[method-assign]
    reported: list[list[str]] = []
    written: list[list[str]] = []

    def put(items: list[MemoryItem]) -> list[MemoryRef]:
        written.append([item.id for item in items])  # one item per episode, under its id
        return router.put_to_provider("rec", items, 30.0)

    try:
        attempted = deliver_stream(
            queue,
            "rec",
            lambda _batch: put,
            lambda outcomes, batch: reported.append([o.episode_id for o in outcomes]) if batch else None,
            limit=4,
        )
        assert attempted == 12
        assert len(provider.batches) == 3
        # three batches and the empty claim that ends the stream, none of them behind a lease
        assert leased_at_claim == [0, 0, 0, 0]
        # outcomes are reported once per batch, in batch order
        assert reported == written and [len(r) for r in reported] == [4, 4, 4]
        assert _positions(provider.log, "a") == list(range(6))
        assert _positions(provider.log, "b") == list(range(6))
        with sqlite3.connect(queue.path) as conn:
            states = dict(conn.execute("SELECT state, COUNT(*) FROM capture_deliveries GROUP BY state").fetchall())
        assert states == {"delivered": 12}
    finally:
        router.close()
        queue.close()
