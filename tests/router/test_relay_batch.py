"""The fan-out's two hand-off savers keep every guarantee of the lanes.

* The relay: deadline-bound calls the caller means to claim are only reserved on their lanes
  and sent to one relay thread, which wakes their workers only for calls still unclaimed.  A
  slow first call must therefore still not delay the others, however many there are.
* The batch: calls handed to lanes at once are waited for together; a hung one is still cut
  at its own budget and the quick ones are still used.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

from paxm_core import MemoryHit, SearchQuery
from paxm_core.router import Route, SearchPolicy
from paxm_core.router.bulkhead import Batch, Lane, Relay

# the deadline-bound test provider and the timing slack of the inline-call tests
from .test_inline_deadline_bound import SLACK, Bounded


def hits_of(fakes: Any, name: str) -> list[MemoryHit]:
    return [fakes.hit(name, f"{name}-1", f"{name} answer", 0.9)]


def test_a_slow_inline_call_does_not_delay_two_bounded_neighbours(fakes: Any, make_router: Any) -> None:
    slow = Bounded("a-slow", hits_of(fakes, "a-slow"), work=0.3)
    quick = [Bounded(n, hits_of(fakes, n)) for n in ("b-quick", "c-quick")]
    router = make_router({"a-slow": slow, "b-quick": quick[0], "c-quick": quick[1]})
    policy = SearchPolicy([Route("a-slow", timeout=1.0), Route("b-quick", timeout=0.2), Route("c-quick", timeout=0.2)])
    for _ in range(2):
        result = router.search(SearchQuery("q"), policy)
        outcomes = {r.provider: r.outcome for r in result.provider_recalls}
        assert outcomes == {"a-slow": "success", "b-quick": "success", "c-quick": "success"}
        assert sorted(h.id for h in result.hits) == ["a-slow-1", "b-quick-1", "c-quick-1"]
    me = threading.get_ident()
    assert slow.threads == [me, me]
    # the relay handed both to their workers while the caller was busy with the slow one
    assert all(t != me for provider in quick for t in provider.threads)
    assert all(len(provider.threads) == 2 for provider in quick)


def test_quick_bounded_neighbours_are_claimed_by_the_caller(fakes: Any, make_router: Any) -> None:
    names = ("a", "b", "c")
    bounded = {n: Bounded(n, hits_of(fakes, n)) for n in names}
    router = make_router(bounded)
    policy = SearchPolicy([Route(n, timeout=1.0) for n in names])
    for _ in range(30):
        result = router.search(SearchQuery("q"), policy)
        assert sorted(h.id for h in result.hits) == ["a-1", "b-1", "c-1"]
    me = threading.get_ident()
    for provider in bounded.values():
        assert len(provider.threads) == 30  # exactly once per recall, wherever it ran
        assert provider.max_active == 1
    assert any(t == me for n in ("b", "c") for t in bounded[n].threads)


def test_relay_forwards_only_unclaimed_calls() -> None:
    lanes = [Lane("relay-a"), Lane("relay-b")]
    relay = Relay("paxm-relay-test")
    ran_on: list[int] = []
    try:

        def note() -> object:
            ran_on.append(threading.get_ident())
            return None

        calls = [lane.reserve(note) for lane in lanes]
        assert lanes[0].claim(calls[0])  # the caller ran the first one itself
        relay.send([(lanes[0], calls[0]), (lanes[1], calls[1])])
        calls[1].wait(2.0)  # ran by its worker, forwarded by the relay
        assert calls[0].done and calls[1].done
        assert ran_on[0] == threading.get_ident() and ran_on[1] != threading.get_ident()
        assert len(ran_on) == 2  # the claimed call was not run a second time
        deadline = time.monotonic() + 1.0
        while any(lane.busy for lane in lanes) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert not any(lane.busy for lane in lanes)  # each slot released exactly once
    finally:
        relay.close()
        for lane in lanes:
            lane.close()


def test_batch_wakes_when_the_last_call_is_done_and_times_out_on_a_hung_one() -> None:
    lanes = [Lane(f"batch-{i}") for i in range(3)]
    release = threading.Event()
    try:
        batch = Batch()
        assert batch.done and batch.wait(0.0)
        for index, lane in enumerate(lanes):
            lane.submit(functools.partial(time.sleep, 0.02 * index), wait=0, batch=batch)
        assert not batch.done
        assert batch.wait(2.0) and batch.done
        hung = Batch()
        lanes[0].submit(lambda: 1, wait=1.0, batch=hung)
        lanes[1].submit(release.wait, wait=1.0, batch=hung)
        started = time.monotonic()
        assert not hung.wait(0.1)
        assert 0.09 <= time.monotonic() - started < 0.1 + SLACK
        release.set()
        assert hung.wait(2.0)
    finally:
        release.set()
        for lane in lanes:
            lane.close()


def test_a_hung_lane_in_a_batch_is_cut_at_its_budget(fakes: Any, make_router: Any) -> None:
    stuck = fakes.HangingProvider("stuck")
    quick = fakes.ScriptedProvider("quick", hits_of(fakes, "quick"), delay=0.02)
    other = fakes.ScriptedProvider("other", hits_of(fakes, "other"))
    router = make_router({"stuck": stuck, "quick": quick, "other": other})
    policy = SearchPolicy([Route("stuck", timeout=0.2), Route("quick", timeout=1.0), Route("other", timeout=1.0)])
    started = time.monotonic()
    result = router.search(SearchQuery("q"), policy)
    assert time.monotonic() - started < 0.2 + SLACK
    outcomes = {r.provider: r.outcome for r in result.provider_recalls}
    assert outcomes == {"stuck": "timeout", "quick": "success", "other": "success"}
    assert sorted(h.id for h in result.hits) == ["other-1", "quick-1"]
