"""Batched delivery (``paxm_core.capture.batch``) through the worker, the real Router and the
real SQLite provider: one write per batch, a bad episode fails alone, order per session holds,
and a batch interrupted before its completion is delivered again under the same ids."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _capture_helpers import turns

from paxm_core import Deadline, MemoryItem, MemoryRef
from paxm_core.api.errors import ProviderError
from paxm_core.api.provider_config import ProviderConfig
from paxm_core.capture import CaptureQueue, DeliveryWorker
from paxm_core.capture.batch import deliver_batch
from paxm_core.router import Router


def _sqlite_provider(path: Path, name: str = "sqlite") -> Any:
    from paxm_core.plugins import get_plugin_manager

    try:
        spec = get_plugin_manager().provider_type("sqlite")
    except Exception as exc:  # the workspace always installs it; say so if it does not
        pytest.fail(f"SQLite provider plugin missing: {exc}")
    return spec.factory(name, ProviderConfig(type="sqlite", enabled=True, path=str(path)))


class Poisoned:
    """Wraps the real SQLite provider: any write carrying ``POISON`` fails, batch or single."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.batches: list[int] = []

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def health(self, deadline: Deadline) -> None:
        self.inner.health(deadline)

    def search(self, query: Any, deadline: Deadline) -> list[Any]:
        return list(self.inner.search(query, deadline))

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        return self.put_batch([item], deadline)[0]

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        self.batches.append(len(items))
        if any("POISON" in i.text for i in items):
            raise ProviderError(self.name, "put", "poisoned item")
        return list(self.inner.put_batch(items, deadline))

    def close(self) -> None:
        self.inner.close()


def _stored(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT text FROM memories ORDER BY text")]


def test_worker_delivers_hundreds_of_episodes_in_a_few_batched_writes(tmp_path: Path) -> None:
    provider = Poisoned(_sqlite_provider(tmp_path / "memory.sqlite"))
    queue = CaptureQueue(tmp_path / "q.sqlite", routes={"default": ["sqlite"]})
    queue.append_many([e for s in range(6) for e in turns(f"s{s}", 100)])
    router = Router({"sqlite": provider})
    try:
        report = DeliveryWorker(queue, router, batch_size=256).flush(timeout=120)
        assert report.ok and report.delivered == 600, report
        assert len(provider.batches) <= 6, provider.batches  # 600 episodes, 256 per write
        assert max(provider.batches) > 1
        texts = _stored(tmp_path / "memory.sqlite")
        assert len(texts) == 600
        assert "prompt s3 42 fine\n\nanswer s3 42" in texts
        assert queue.status().deliveries == {"delivered": 600}
    finally:
        router.close()
        queue.close()


def test_a_failing_episode_fails_alone_and_its_session_waits(tmp_path: Path) -> None:
    provider = Poisoned(_sqlite_provider(tmp_path / "memory.sqlite"))
    queue = CaptureQueue(tmp_path / "q.sqlite", routes={"default": ["sqlite"]}, retry_min=60)
    queue.append_many(turns("bad", 5, poison_at=2) + turns("good", 5))
    router = Router({"sqlite": provider})
    try:
        claims, _ = queue.claim_batch("sqlite", limit=100)
        assert len(claims) == 10
        outcomes = deliver_batch(queue, claims, lambda items: router.put_to_provider("sqlite", items, 30.0))
        states = {(o.session_key, o.state) for o in outcomes}
        # the batch write failed; one by one, every good episode got through ...
        assert [o.state for o in outcomes if o.session_key == "good"] == ["delivered"] * 5
        assert [o.state for o in outcomes if o.session_key == "bad"] == ["delivered", "delivered", "retry"]
        assert ("bad", "retry") in states
        # ... and the bad session's later episodes were not sent ahead of the failed one:
        # released untried (no attempt counted), still owed
        with sqlite3.connect(queue.path) as conn:
            rows = conn.execute(
                "SELECT first_sequence, state, attempts FROM capture_deliveries WHERE session_key = 'bad'"
                " ORDER BY first_sequence"
            ).fetchall()
        assert [(r[1], r[2]) for r in rows] == [
            ("delivered", 1),
            ("delivered", 1),
            ("retry", 1),
            ("pending", 0),
            ("pending", 0),
        ]
        # they stay behind their failed predecessor until it is delivered
        assert queue.claim_batch("sqlite", limit=100)[0] == []
        texts = _stored(tmp_path / "memory.sqlite")
        assert len(texts) == 7 and not any("POISON" in t for t in texts)
        assert not any(t.startswith("prompt bad 3") for t in texts)
    finally:
        router.close()
        queue.close()


def test_a_batch_interrupted_before_completion_is_delivered_again_once(tmp_path: Path) -> None:
    memory = tmp_path / "memory.sqlite"
    provider = _sqlite_provider(memory)
    queue_path = tmp_path / "q.sqlite"
    queue = CaptureQueue(queue_path, routes={"default": ["sqlite"]})
    queue.append_many(turns("a", 30) + turns("b", 30))
    router = Router({"sqlite": provider})
    try:
        claims, _ = queue.claim_batch("sqlite", limit=100)
        # the write lands, then the process "dies" before complete_many
        router.put_to_provider("sqlite", [i for c in claims for i in c.items], 30.0)
        queue.close()
        reopened = CaptureQueue(queue_path, routes={"default": ["sqlite"]})  # recovers the dead lease
        try:
            report = DeliveryWorker(reopened, router).flush(timeout=60)
            assert report.ok and report.delivered == 60, report
        finally:
            reopened.close()
        with sqlite3.connect(memory) as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM memories")]
        assert len(ids) == 60 == len(set(ids)) == len({c.episode_id for c in claims})
        assert set(ids) == {c.episode_id for c in claims}
    finally:
        router.close()


def test_batch_size_one_keeps_the_one_by_one_path(tmp_path: Path) -> None:
    provider = Poisoned(_sqlite_provider(tmp_path / "memory.sqlite"))
    queue = CaptureQueue(tmp_path / "q.sqlite", routes={"default": ["sqlite"]})
    queue.append_many(turns("s", 20))
    router = Router({"sqlite": provider})
    try:
        report = DeliveryWorker(queue, router, batch_size=1).flush(timeout=60)
        assert report.ok and report.delivered == 20
        assert provider.batches == [1] * 20
    finally:
        router.close()
        queue.close()
