"""Timeouts and bulkheads: a stuck provider never stalls a recall or a write (inventory §3 "Bulkhead")."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from paxm_core import Deadline, MemoryItem, RecallError, SearchQuery, WriteError
from paxm_core.router import PutPolicy, Route, SearchPolicy
from paxm_core.router.bulkhead import Lane, LaneBusy

TIMEOUT = 0.2
SLACK = 0.35  # generous: the machine is shared by several engineers


def test_hanging_best_effort_provider_cannot_stall_recall(fakes: Any, make_router: Any) -> None:
    healthy = fakes.ScriptedProvider("healthy", [fakes.hit("healthy", "1", "healthy answer", 0.9)])
    stuck = fakes.HangingProvider("stuck")
    router = make_router({"healthy": healthy, "stuck": stuck})
    policy = SearchPolicy([Route("healthy", required=True), Route("stuck", timeout=TIMEOUT)])

    started = time.monotonic()
    first = router.search(SearchQuery("q"), policy)
    elapsed = time.monotonic() - started
    assert elapsed < TIMEOUT + SLACK
    assert [h.id for h in first.hits] == ["1"]
    recalls = {r.provider: r for r in first.provider_recalls}
    assert recalls["stuck"].outcome == "timeout" and not recalls["stuck"].bulkhead_busy
    assert recalls["stuck"].timeout_ms == 200
    assert first.provider_errors[0].provider == "stuck" and "timed out" in first.provider_errors[0].error
    assert stuck.deadlines[0].cancelled  # the provider was told to stop

    started = time.monotonic()
    second = router.search(SearchQuery("q"), policy)
    assert time.monotonic() - started < TIMEOUT + SLACK
    assert [h.id for h in second.hits] == ["1"]
    recalls = {r.provider: r for r in second.provider_recalls}
    assert recalls["stuck"].bulkhead_busy is True and recalls["stuck"].outcome == "timeout"
    assert stuck.calls == 1  # the second call never reached the stuck provider
    assert second.to_json()["provider_recalls"][1]["bulkhead_busy"] is True

    stuck.release.set()  # once the provider returns, its slot is free again
    deadline = time.monotonic() + 2
    while router._lane("stuck", "search").busy and time.monotonic() < deadline:
        time.sleep(0.01)
    third = router.search(SearchQuery("q"), policy)
    assert {r.provider: r.outcome for r in third.provider_recalls} == {"healthy": "success", "stuck": "success"}


def test_busy_lane_does_not_delay_other_providers(fakes: Any, make_router: Any) -> None:
    stuck = fakes.HangingProvider("a-stuck")
    slowish = fakes.ScriptedProvider("b-slow", [fakes.hit("b-slow", "1", "x", 0.9)], delay=0.15)
    router = make_router({"a-stuck": stuck, "b-slow": slowish})
    policy = SearchPolicy([Route("a-stuck", timeout=0.3), Route("b-slow", timeout=0.3)])
    router.search(SearchQuery("q"), policy)  # occupies a-stuck's slot
    started = time.monotonic()
    result = router.search(SearchQuery("q"), policy)
    # b-slow was dispatched at once although a-stuck's lane was busy: total ≈ max, not sum
    assert time.monotonic() - started < 0.3 + SLACK
    assert [h.id for h in result.hits] == ["1"]


def test_required_timeout_raises_and_marks_timed_out(fakes: Any, make_router: Any) -> None:
    stuck = fakes.HangingProvider("stuck")
    router = make_router({"stuck": stuck})
    started = time.monotonic()
    with pytest.raises(RecallError, match="stuck: search deadline exceeded") as caught:
        router.search(SearchQuery("q"), SearchPolicy([Route("stuck", required=True)]), Deadline.after(TIMEOUT))
    assert time.monotonic() - started < TIMEOUT + SLACK
    assert caught.value.result.timed_out is True
    assert caught.value.result.provider_recalls[0].outcome == "timeout"


def test_route_timeout_without_overall_deadline_is_not_timed_out(fakes: Any, make_router: Any) -> None:
    router = make_router({"stuck": fakes.HangingProvider("stuck")})
    result = router.search(SearchQuery("q"), SearchPolicy([Route("stuck", timeout=0.05)]))
    assert result.timed_out is False and result.provider_recalls[0].outcome == "timeout"


def test_slow_provider_within_timeout_succeeds(fakes: Any, make_router: Any) -> None:
    slow = fakes.ScriptedProvider("slow", [fakes.hit("slow", "1", "late but fine", 0.9)], delay=0.05)
    result = make_router({"slow": slow}).search(SearchQuery("q"), SearchPolicy([Route("slow", timeout=1.0)]))
    assert [h.id for h in result.hits] == ["1"]
    assert result.provider_recalls[0].duration_ms >= 40


def test_stuck_best_effort_writer_returns_after_its_timeout(fakes: Any, make_router: Any) -> None:
    store = fakes.MemoryProvider("store")
    stuck = fakes.HangingProvider("stuck")
    router = make_router({"store": store, "stuck": stuck})
    policy = PutPolicy([Route("store", required=True, timeout=5), Route("stuck", timeout=TIMEOUT)], tier="ltm")
    started = time.monotonic()
    result = router.put([MemoryItem("remember me", id="x1")], policy)
    assert time.monotonic() - started < TIMEOUT + SLACK
    assert [r.to_json() for r in result.refs] == [{"provider": "store", "id": "x1"}]
    assert [(e.provider, e.op, e.required) for e in result.provider_errors] == [("stuck", "put", False)]
    # the put lane is separate from the search lane: a stuck write does not block recall
    assert not router._lane("stuck", "search").busy and router._lane("stuck", "put").busy
    second = router.put([MemoryItem("again", id="x2")], policy)
    assert "bulkhead busy" in second.provider_errors[0].error


def test_required_writer_timeout_raises_write_error_with_partial(fakes: Any, make_router: Any) -> None:
    store = fakes.MemoryProvider("store")
    router = make_router({"store": store, "stuck": fakes.HangingProvider("stuck")})
    policy = PutPolicy([Route("store"), Route("stuck", required=True, timeout=0.05)])
    with pytest.raises(WriteError, match="stuck: put timed out after 50ms") as caught:
        router.put([MemoryItem("x", id="1")], policy)
    assert [r.provider for r in caught.value.result.refs] == ["store"]


def test_lane_releases_slot_before_signalling() -> None:
    lane = Lane("t")
    try:
        for value in range(50):  # back-to-back calls must never see a stale busy slot
            call = lane.submit(lambda v=value: v, wait=0)
            assert call.wait(1) == value
    finally:
        lane.close()


def test_lane_busy_and_error_propagation() -> None:
    lane = Lane("t")
    gate = threading.Event()
    try:
        call = lane.submit(gate.wait, wait=0)
        with pytest.raises(LaneBusy):
            lane.submit(lambda: 1, wait=0.05)
        gate.set()
        assert call.wait(1) is True
        failing = lane.submit(lambda: 1 / 0, wait=1)
        with pytest.raises(ZeroDivisionError):
            failing.wait(1)
    finally:
        lane.close()
    with pytest.raises(RuntimeError, match="closed"):
        lane.submit(lambda: 1, wait=0)


def test_health_and_cleanup_survive_a_hanging_provider(fakes: Any, make_router: Any) -> None:
    store = fakes.BatchMemoryProvider("store")
    stuck = fakes.HangingProvider("stuck")
    router = make_router({"store": store, "stuck": stuck}, required={"stuck"})
    started = time.monotonic()
    statuses = router.health(timeout=0.1)
    assert time.monotonic() - started < 0.1 + SLACK
    assert [s.to_json() for s in statuses] == [
        {"provider": "store", "required": False, "ok": True},
        {"provider": "stuck", "required": True, "ok": False, "error": "timed out after 100ms"},
    ]


def test_providers_are_searched_and_written_concurrently(fakes: Any, make_router: Any) -> None:
    providers = {
        n: fakes.ScriptedProvider(n, [fakes.hit(n, "1", f"{n} answer", 0.9)], delay=0.4) for n in ("a", "b", "c")
    }
    router = make_router(providers)
    started = time.monotonic()
    result = router.search(SearchQuery("q"), SearchPolicy([Route(n, timeout=5.0) for n in providers]))
    assert time.monotonic() - started < 0.8  # ≈ the 0.4 s max, far from the 1.2 s sum
    assert len(result.hits) == 3
    started = time.monotonic()
    written = router.put([MemoryItem("x", id="1")], PutPolicy([Route(n, timeout=5.0) for n in providers]))
    assert time.monotonic() - started < 0.8
    assert [r.provider for r in written.refs] == ["a", "b", "c"]


def test_concurrent_callers_share_one_router_safely(fakes: Any, make_router: Any) -> None:
    store = fakes.MemoryProvider("store")
    router = make_router({"store": store})
    router.put([MemoryItem(f"shared fact {i}", id=str(i)) for i in range(5)], PutPolicy())
    policy = SearchPolicy([Route("store")], limit=3)
    expected = [h.to_json() for h in router.search(SearchQuery("shared fact"), policy).hits]
    failures: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(15):
                got = [h.to_json() for h in router.search(SearchQuery("shared fact"), policy).hits]
                assert got == expected
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert failures == [] and len(expected) == 3


def test_close_does_not_wait_for_a_stuck_provider(fakes: Any) -> None:
    from paxm_core.router import Router

    stuck = fakes.HangingProvider("stuck")
    router = Router({"stuck": stuck})
    router.search(SearchQuery("q"), SearchPolicy([Route("stuck", timeout=0.05)]))
    started = time.monotonic()
    router.close()
    assert time.monotonic() - started < 0.3
    stuck.release.set()


def test_busy_lane_is_waited_for_while_unlimited_route_runs(fakes: Any, make_router: Any) -> None:
    gate = threading.Event()
    recovering = fakes.ScriptedProvider("a", [fakes.hit("a", "1", "recovered", 0.9)], gate=gate)
    unlimited = fakes.ScriptedProvider("b", [fakes.hit("b", "2", "slow unlimited", 0.8)], delay=0.4)
    router = make_router({"a": recovering, "b": unlimited})
    router.search(SearchQuery("q"), SearchPolicy([Route("a", timeout=0.05)]))  # leaves a's slot taken
    threading.Timer(0.1, gate.set).start()  # a's stuck call returns shortly
    result = router.search(SearchQuery("q"), SearchPolicy([Route("a", timeout=0.3), Route("b")]))
    outcomes = {r.provider: (r.outcome, r.bulkhead_busy) for r in result.provider_recalls}
    assert outcomes == {"a": ("success", False), "b": ("success", False)}
    assert sorted(h.id for h in result.hits) == ["1", "2"]


def test_cancelling_the_callers_deadline_reaches_running_providers(fakes: Any, make_router: Any) -> None:
    class Cooperative(fakes.ScriptedProvider):  # type: ignore[misc,name-defined]
        """Works until its deadline says stop (as the SQLite provider's progress handler does)."""

        def search(self, query: Any, deadline: Deadline) -> Any:
            self.deadlines.append(deadline)
            while not deadline.expired():
                time.sleep(0.005)
            deadline.check("search")

    timed = fakes.HangingProvider("timed")  # ignores its deadline: the router abandons it
    unlimited = Cooperative("unlimited")  # runs on the calling thread: it must stop by itself
    router = make_router({"timed": timed, "unlimited": unlimited})
    overall = Deadline.none()
    threading.Timer(0.1, overall.cancel).start()
    started = time.monotonic()
    result = router.search(SearchQuery("q"), SearchPolicy([Route("timed", timeout=30.0), Route("unlimited")]), overall)
    assert time.monotonic() - started < 0.1 + SLACK
    assert {r.provider: r.outcome for r in result.provider_recalls} == {"timed": "timeout", "unlimited": "timeout"}
    assert {e.provider: e.error for e in result.provider_errors} == {
        "timed": "search cancelled",
        "unlimited": "search cancelled",
    }
    assert timed.deadlines[0].cancelled and unlimited.deadlines[0] is overall
