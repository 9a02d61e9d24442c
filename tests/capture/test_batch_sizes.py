"""How many episodes a delivery writes at once, per provider (``DeliveryWorker.batch_for``).

A provider that declares ``large_batches`` (a local store: cost per item) drains a backlog in
batches of ``LARGE_DELIVERY_BATCH``; any other ``put_batch`` provider in batches of
``DEFAULT_DELIVERY_BATCH``; a provider without ``put_batch`` one episode at a time.  A batch
size the caller fixes applies to every provider.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _capture_helpers import FakeProvider, event

from paxm_core import Deadline, MemoryItem, MemoryRef
from paxm_core.api.provider_config import ProviderConfig
from paxm_core.capture import DeliveryWorker
from paxm_core.capture.batch import DEFAULT_DELIVERY_BATCH, LARGE_DELIVERY_BATCH
from paxm_core.plugins import get_plugin_manager
from paxm_core.router import Router


class Batches(FakeProvider):
    """An in-memory ``put_batch`` store recording the size of every write."""

    def __init__(self, name: str, capabilities: frozenset[str]) -> None:
        super().__init__(name)
        self._capabilities = capabilities
        self.sizes: list[int] = []
        self._sizes_lock = threading.Lock()

    def capabilities(self) -> frozenset[str]:
        return self._capabilities

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        with self._sizes_lock:
            self.sizes.append(len(items))
        return [self.put(item, deadline) for item in items]


def _backlog(queue: Any, episodes: int) -> None:
    events = []
    for n in range(episodes):
        events.append(event(f"u{n}", f"s{n % 3}", f"prompt {n}"))
        events.append(event(f"a{n}", f"s{n % 3}", f"answer {n}", terminal=True))
    for first in range(0, len(events), 1000):
        queue.append_many(events[first : first + 1000])


@pytest.mark.parametrize(
    ("declared", "fixed", "expected"),
    [
        (frozenset({"put_batch", "large_batches"}), None, LARGE_DELIVERY_BATCH),
        (frozenset({"put_batch"}), None, DEFAULT_DELIVERY_BATCH),
        (frozenset({"put_batch", "large_batches"}), 8, 8),
        (frozenset({"put_batch"}), 8, 8),
    ],
    ids=["large", "default", "fixed-large", "fixed-default"],
)
def test_a_backlog_is_written_in_batches_of_the_providers_size(
    open_queue: Any, declared: frozenset[str], fixed: int | None, expected: int
) -> None:
    provider = Batches("store", declared)
    episodes = LARGE_DELIVERY_BATCH + 300 if fixed is None else 40
    queue = open_queue(routes={"default": ["store"]})
    _backlog(queue, episodes)
    router = Router({"store": provider})
    try:
        worker = DeliveryWorker(queue, router, batch_size=fixed, tick=30.0)
        assert worker.batch_for("store") == expected
        report = worker.flush(timeout=120)
        assert report.ok and report.delivered == episodes, report
    finally:
        router.close()
    assert max(provider.sizes) == expected
    assert sum(provider.sizes) == episodes
    assert len(provider.stored) == episodes


def test_one_by_one_without_put_batch_whatever_the_size(open_queue: Any) -> None:
    provider = FakeProvider("plain")
    queue = open_queue(routes={"default": ["plain"]})
    router = Router({"plain": provider})
    try:
        assert DeliveryWorker(queue, router).batch_for("plain") == 1
        assert DeliveryWorker(queue, router, batch_size=64).batch_for("plain") == 1
    finally:
        router.close()


def test_the_sqlite_provider_takes_large_batches(open_queue: Any, tmp_path: Path) -> None:
    config = ProviderConfig(type="sqlite", enabled=True, path=str(tmp_path / "memories.sqlite"))
    provider = get_plugin_manager().provider_type("sqlite").factory("sqlite", config)
    router = Router({"sqlite": provider})
    try:
        assert "large_batches" in router.capabilities("sqlite")
        assert DeliveryWorker(open_queue(), router).batch_for("sqlite") == LARGE_DELIVERY_BATCH
    finally:
        router.close()
