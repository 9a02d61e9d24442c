"""Asking whether a provider is deadline-bound never blocks a recall.

The router asks on every fan-out.  ``capabilities()`` may do I/O: a JSON-RPC plugin's first
answer is a round trip to the plugin, up to its probe timeout when the plugin hangs.  An
unknown provider is probed on a helper thread and waited for only briefly; meanwhile its calls
go to their lane, and the other routes' budgets are not eaten by the probe.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from paxm_core import Deadline, MemoryHit, SearchQuery
from paxm_core.protocols import CAP_DEADLINE_BOUND
from paxm_core.router import Route, SearchPolicy

SLACK = 0.5  # the machine is shared: generous next to the 5 s the probe would have cost


class Bounded:
    """Deadline-bound, in-process: answers ``capabilities()`` at once."""

    def __init__(self, name: str, hits: list[MemoryHit]) -> None:
        self._name = name
        self.hits = hits
        self.threads: list[int] = []

    @property
    def name(self) -> str:
        return self._name

    def capabilities(self) -> frozenset[str]:
        return frozenset({CAP_DEADLINE_BOUND})

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        self.threads.append(threading.get_ident())
        return [h.copy() for h in self.hits]

    def health(self, deadline: Deadline) -> None:
        return None


class SlowToAsk:
    """A plugin whose capability probe takes 5 s (hung), while its searches answer."""

    def __init__(self, name: str, hits: list[MemoryHit]) -> None:
        self._name = name
        self.hits = hits
        self.asked = threading.Event()

    @property
    def name(self) -> str:
        return self._name

    def capabilities(self) -> frozenset[str]:
        self.asked.set()
        time.sleep(5)
        return frozenset()

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        return [h.copy() for h in self.hits]

    def health(self, deadline: Deadline) -> None:
        return None


def test_a_slow_capability_probe_does_not_delay_a_recall(fakes: Any, make_router: Any) -> None:
    bounded = Bounded("local", [fakes.hit("local", "local-1", "local answer", 0.9)])
    slow = SlowToAsk("plugin", [fakes.hit("plugin", "plugin-1", "plugin answer", 0.8)])
    router = make_router({"local": bounded, "plugin": slow})
    policy = SearchPolicy([Route("local", timeout=1.0), Route("plugin", timeout=1.0)])
    started = time.monotonic()
    result = router.search(SearchQuery("q"), policy)
    took = time.monotonic() - started
    assert slow.asked.is_set()
    assert took < 1.0 + SLACK, took  # not the 5 s probe
    # Neither route timed out: the probe ate no route's budget.
    assert sorted(h.id for h in result.hits) == ["local-1", "plugin-1"]
    # Later recalls do not ask again while the probe is still out, and stay quick.
    started = time.monotonic()
    again = router.search(SearchQuery("q"), policy)
    assert time.monotonic() - started < 1.0 + SLACK
    assert sorted(h.id for h in again.hits) == ["local-1", "plugin-1"]
    # The in-process provider answered at once, so it ran on the caller's thread.
    assert threading.get_ident() in bounded.threads
