"""The runner: quick calls of a fan-out share one helper thread, and every lane guarantee holds.

Providers that are not deadline-bound run on lanes (a thread each) so that one that hangs cannot
stall the recall.  Calls that only compute gain nothing from a thread each under the interpreter
lock, so once a lane has been quick for :data:`QUICK_STREAK` calls its calls ride one runner
thread with the others'.  These tests pin what that must not change: a hung provider delays its
neighbours by a few milliseconds at most and is cut at its own budget, a provider that waits on
I/O keeps its own lane (the calls still overlap), one call per provider at a time, each call once.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from paxm_core import Deadline, MemoryHit, MemoryItem, MemoryRef, SearchQuery
from paxm_core.router import PutPolicy, Route, SearchPolicy
from paxm_core.router.bulkhead import QUICK_CALL, QUICK_STREAK, Call, Lane, Runner, stall_allowance

# the timing slack of the inline-call tests
from .test_inline_deadline_bound import SLACK


class Computing:
    """A provider that answers at once (computing, no I/O) and notes the thread of every call.

    ``hang`` (an event, unset) makes the next calls block until it is set: a quick provider
    that suddenly hangs.  ``nap`` makes every call sleep that long: a provider waiting on I/O.
    """

    def __init__(self, name: str, fakes: Any) -> None:
        self._name = name
        self.hits = [fakes.hit(name, f"{name}-1", f"{name} answer", 0.9)]
        self.threads: list[int] = []
        self.started: list[float] = []
        self.hang: threading.Event | None = None
        self.nap = 0.0
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            self.threads.append(threading.get_ident())
            self.started.append(time.monotonic())
            if self.hang is not None:
                self.hang.wait(30)
            if self.nap:
                time.sleep(self.nap)
            return [h.copy() for h in self.hits]
        finally:
            with self._lock:
                self.active -= 1

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        self.threads.append(threading.get_ident())
        return MemoryRef(self._name, item.id or "x")

    def health(self, deadline: Deadline) -> None:
        return None


def _providers(fakes: Any, names: tuple[str, ...] = ("a", "b", "c")) -> dict[str, Computing]:
    return {n: Computing(n, fakes) for n in names}


def _warm(router: Any, policy: SearchPolicy, rounds: int = QUICK_STREAK + 4) -> None:
    """Recalls until every lane has its quick streak (a loaded machine may break one: retried)."""
    for _ in range(rounds * 20):
        router.search(SearchQuery("q"), policy)
        lanes = [router._lane(route.name, "search") for route in policy.routes]
        if all(lane.quick for lane in lanes):
            return
    pytest.fail("the computing providers' lanes never became quick")


def _warmed(fakes: Any, make_router: Any, policy: SearchPolicy) -> tuple[dict[str, Computing], Any]:
    """Providers named by ``policy``, a router whose lanes for them are quick, their notes cleared."""
    providers = _providers(fakes, tuple(route.name for route in policy.routes))
    router = make_router(providers)
    _warm(router, policy)
    for provider in providers.values():
        provider.threads.clear()
        provider.started.clear()
    return providers, router


def _ids(result: Any) -> list[str]:
    return sorted(h.id for h in result.hits)


def _recall_until_shared(router: Any, providers: dict[str, Computing], policy: SearchPolicy, want: int) -> int:
    """Recalls until ``want`` of them ran their calls on one thread; returns how many it took.

    Every recall must find all hits, and every call runs once and never on the caller.  On a
    loaded machine some recalls legitimately go to the lanes (a batch past its allowance, or a
    lane whose call took more than QUICK_CALL and lost its streak), so the test asks for a
    number of shared recalls, not a share of them: with the runner off, none is ever shared.
    """
    me = threading.get_ident()
    shared = 0
    for done in range(1, 201):
        assert _ids(router.search(SearchQuery("q"), policy)) == ["a-1", "b-1", "c-1"]
        assert all(len(p.threads) == done for p in providers.values())
        assert all(p.threads[-1] != me for p in providers.values())
        shared += len({p.threads[-1] for p in providers.values()}) == 1
        if shared >= want:
            return done
    pytest.fail(f"only {shared} of 200 recalls ran their three calls on one thread")


def test_quick_lanes_share_one_runner_thread(fakes: Any, make_router: Any) -> None:
    policy = SearchPolicy([Route(n, timeout=1.0) for n in ("a", "b", "c")])
    providers, router = _warmed(fakes, make_router, policy)
    took = _recall_until_shared(router, providers, policy, want=15)
    assert took <= 100, took  # the runner carries most recalls, even on a loaded machine


def test_routes_without_a_timeout_ride_the_runner_too(fakes: Any, make_router: Any) -> None:
    policy = SearchPolicy([Route(n) for n in ("a", "b", "c")])  # no route timeout, no deadline
    providers, router = _warmed(fakes, make_router, policy)
    _recall_until_shared(router, providers, policy, want=10)


def test_a_hung_quick_provider_delays_its_neighbours_by_the_allowance_at_most(fakes: Any, make_router: Any) -> None:
    policy = SearchPolicy([Route(n, timeout=0.5) for n in ("a", "b", "c")])
    providers, router = _warmed(fakes, make_router, policy)
    hang = providers["a"].hang = threading.Event()  # "a" runs first on the runner
    try:
        started = time.monotonic()
        result = router.search(SearchQuery("q"), policy)
        elapsed = time.monotonic() - started
        outcomes = {r.provider: r.outcome for r in result.provider_recalls}
        assert outcomes == {"a": "timeout", "b": "success", "c": "success"}
        assert _ids(result) == ["b-1", "c-1"]
        assert elapsed < 0.5 + SLACK  # cut at its own budget
        # the neighbours were handed to their own lanes after the allowance, not after "a"'s budget
        allowance = stall_allowance(3)
        for name in ("b", "c"):
            assert providers[name].started[0] - started < allowance + SLACK / 2
        stuck = providers["a"].threads[0]
        assert providers["b"].threads[0] != stuck and providers["c"].threads[0] != stuck
        # "a" lost its quick streak; its slot is still held, so its next call fails fast as busy,
        # and the others carry on (on a new runner thread: the stuck one was retired)
        assert not router._lane("a", "search").quick
        again = router.search(SearchQuery("q"), policy)
        by_name = {r.provider: r for r in again.provider_recalls}
        assert by_name["a"].outcome == "timeout" and by_name["a"].bulkhead_busy
        assert _ids(again) == ["b-1", "c-1"]
        assert providers["b"].threads[-1] != stuck
    finally:
        hang.set()
    # once "a" returns it is an ordinary lane again; the recall is whole
    deadline = time.monotonic() + 5
    while router._lane("a", "search").busy and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _ids(router.search(SearchQuery("q"), policy)) == ["a-1", "b-1", "c-1"]


def test_a_provider_waiting_on_io_keeps_its_own_lane(fakes: Any, make_router: Any) -> None:
    providers = _providers(fakes, ("a", "b", "c", "io"))
    providers["io"].nap = QUICK_CALL / 4  # short, but spent waiting, not computing
    router = make_router(providers)
    policy = SearchPolicy([Route(n, timeout=1.0) for n in providers])
    quick = SearchPolicy([Route(n, timeout=1.0) for n in ("a", "b", "c")])
    _warm(router, quick)
    for _ in range(QUICK_STREAK * 2):
        assert _ids(router.search(SearchQuery("q"), policy)) == ["a-1", "b-1", "c-1", "io-1"]
    assert not router._lane("io", "search").quick
    io_threads = set(providers["io"].threads)
    assert len(io_threads) == 1  # always its own lane's worker
    assert not io_threads & {t for n in ("a", "b", "c") for t in providers[n].threads}


def test_one_call_per_provider_under_concurrent_callers(fakes: Any, make_router: Any) -> None:
    policy = SearchPolicy([Route(n, timeout=2.0) for n in ("a", "b", "c")])
    providers, router = _warmed(fakes, make_router, policy)
    errors: list[BaseException] = []

    def recall() -> None:
        try:
            for _ in range(40):
                result = router.search(SearchQuery("q"), policy)
                # a lane busy with another caller's call is reported busy, never run twice at once
                for r in result.provider_recalls:
                    assert r.outcome == "success" or r.bulkhead_busy, r
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=recall) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert all(p.max_active == 1 for p in providers.values())


def test_a_bounded_route_keeps_the_caller_and_no_runner_is_used(fakes: Any, make_router: Any) -> None:
    from .test_inline_deadline_bound import Bounded

    providers: dict[str, Any] = _providers(fakes, ("b", "c"))
    providers["a"] = Bounded("a", [fakes.hit("a", "a-1", "a answer", 0.9)])
    router = make_router(providers)
    policy = SearchPolicy([Route(n, timeout=1.0) for n in ("a", "b", "c")])
    for _ in range(QUICK_STREAK + 4):
        assert _ids(router.search(SearchQuery("q"), policy)) == ["a-1", "b-1", "c-1"]
    me = threading.get_ident()
    assert providers["a"].threads[-1] == me  # inline, as before
    assert router._runner._current is None  # never started


def test_writes_to_quick_providers_ride_the_runner(fakes: Any, make_router: Any) -> None:
    providers = _providers(fakes)
    router = make_router(providers)
    policy = PutPolicy([Route(n, timeout=1.0) for n in providers])
    for i in range(QUICK_STREAK * 4):
        written = router.put([MemoryItem(f"fact {i}", id=str(i))], policy)
        assert [r.provider for r in written.refs] == ["a", "b", "c"]
    assert all(router._lane(n, "put").quick for n in providers)
    last = {p.threads[-1] for p in providers.values()}
    assert len(last) == 1 and threading.get_ident() not in last


# -- the parts ---------------------------------------------------------------------------------


def _run(lane: Lane, fn: Any) -> Call[object]:
    call = lane.submit(fn, wait=1.0)
    call.wait(5.0)
    return call


def test_a_lane_is_quick_after_a_streak_and_one_slow_call_resets_it() -> None:
    lane = Lane("streak")
    try:
        for _ in range(QUICK_STREAK):
            assert not lane.quick
            _run(lane, lambda: None)
        assert lane.quick
        _run(lane, lambda: time.sleep(QUICK_CALL * 3))  # slow
        assert not lane.quick
        for _ in range(QUICK_STREAK):
            _run(lane, lambda: None)
        assert lane.quick
        _run(lane, lambda: time.sleep(QUICK_CALL / 2))  # short, but waiting rather than computing
        assert not lane.quick
        lane.not_quick()
        assert not lane.quick
    finally:
        lane.close()


def test_run_inline_counts_towards_the_streak_only_when_asked() -> None:
    lane = Lane("inline-streak")
    try:
        for _ in range(QUICK_STREAK):
            lane.run_inline(lambda: None, wait=None)
        assert not lane.quick
        for _ in range(QUICK_STREAK):
            lane.run_inline(lambda: None, wait=None, observe=True)
        assert lane.quick
    finally:
        lane.close()


def test_a_retired_runner_thread_finishes_what_it_holds_and_the_next_batch_gets_a_new_one() -> None:
    runner = Runner("paxm-runner-test")
    lanes = [Lane("retire-a"), Lane("retire-b")]
    gate = threading.Event()
    ran: list[tuple[str, int]] = []
    try:
        first = lanes[0].reserve(lambda: (gate.wait(5), ran.append(("first", threading.get_ident()))))
        token = runner.send([(lanes[0], first)])
        runner.retire(token)
        runner.retire(token)  # twice is harmless
        second = lanes[1].reserve(lambda: ran.append(("second", threading.get_ident())))
        runner.send([(lanes[1], second)])
        second.wait(5.0)  # not held up by the retired thread, stuck in "first"
        assert [name for name, _ in ran] == ["second"]
        gate.set()
        first.wait(5.0)
        assert ran[0][1] != ran[1][1]
        assert not lanes[0].busy and not lanes[1].busy
    finally:
        gate.set()
        runner.close()
        for lane in lanes:
            lane.close()


def test_a_closed_runner_hands_its_calls_to_their_lanes() -> None:
    runner = Runner("paxm-runner-closed")
    lane = Lane("closed-runner")
    try:
        runner.close()
        call = lane.reserve(threading.get_ident)
        runner.send([(lane, call)])
        assert call.wait(5.0) == lane._thread.ident  # type: ignore[union-attr]
    finally:
        lane.close()
