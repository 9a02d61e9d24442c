"""Deadline-bound providers: one call of a fan-out may run on the caller's thread.

A provider declaring ``CAP_DEADLINE_BOUND`` promises to return by its deadline on its own, so
the router may skip the hand-off to its lane for one route.  Everything the lanes guarantee
still holds: a hung provider never stalls the recall past its route budget, a slow one does
not delay the others, the caller's cancel reaches the call, one call per provider at a time,
and a result returned after the budget counts as a timeout.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

from paxm_core import Deadline, DeadlineExceeded, MemoryHit, MemoryItem, SearchQuery
from paxm_core.protocols import CAP_DEADLINE_BOUND, capabilities_of
from paxm_core.router import PutPolicy, Route, SearchPolicy

SLACK = 0.35  # generous: the machine is shared by several engineers


class Bounded:
    """In-process provider that keeps the deadline-bound promise: it works in small steps,
    checking its deadline between them, and records the thread each call ran on."""

    def __init__(self, name: str, hits: list[MemoryHit], work: float = 0.0, *, overrun: float = 0.0) -> None:
        self._name = name
        self.hits = hits
        self.work = work  # seconds of "work" per search, done in 5 ms steps
        self.overrun = overrun  # breaks the promise: keeps going this long past the deadline
        self.threads: list[int] = []
        self.deadlines: list[Deadline] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def capabilities(self) -> frozenset[str]:
        return frozenset({CAP_DEADLINE_BOUND})

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            self.threads.append(threading.get_ident())
            self.deadlines.append(deadline)
            finish = time.monotonic() + self.work
            while time.monotonic() < finish:
                if self.overrun:
                    if deadline.expired():
                        time.sleep(self.overrun)
                        break
                else:
                    deadline.check("search")
                time.sleep(0.005)
            return [h.copy() for h in self.hits]
        finally:
            with self._lock:
                self.active -= 1

    def put(self, item: MemoryItem, deadline: Deadline) -> Any:
        from paxm_core import MemoryRef

        self.threads.append(threading.get_ident())
        deadline.check("put")
        return MemoryRef(self._name, item.id or "x")

    def health(self, deadline: Deadline) -> None:
        return None


def hits_of(fakes: Any, name: str) -> list[MemoryHit]:
    return [fakes.hit(name, f"{name}-1", f"{name} answer", 0.9)]


def test_the_capability_is_declared_only() -> None:
    assert CAP_DEADLINE_BOUND in capabilities_of(Bounded("b", []))
    assert CAP_DEADLINE_BOUND not in capabilities_of(object())


def test_bounded_routes_run_on_the_caller_thread(fakes: Any, make_router: Any) -> None:
    first, second = Bounded("a", hits_of(fakes, "a")), Bounded("b", hits_of(fakes, "b"))
    router = make_router({"a": first, "b": second})
    policy = SearchPolicy([Route("a", timeout=1.0), Route("b", timeout=1.0)])
    for _ in range(20):
        result = router.search(SearchQuery("q"), policy)
        assert sorted(h.id for h in result.hits) == ["a-1", "b-1"]
    me = threading.get_ident()
    assert all(t == me for t in first.threads)  # the first one always runs inline
    assert len(second.threads) == 20  # the second ran once per recall, wherever it ran
    # ... and mostly on the caller too: its worker seldom gets the interpreter lock before
    # the caller, done with the first, claims the call.
    assert any(t == me for t in second.threads)


def test_a_claimed_call_runs_exactly_once_and_frees_its_slot_once() -> None:
    from paxm_core.router.bulkhead import Lane

    lane = Lane("race")
    runs: list[int] = []
    claimed = 0
    try:

        def job(index: int) -> int:
            runs.append(index)
            return index

        for index in range(300):
            call = lane.submit(functools.partial(job, index), wait=1.0)
            if index % 3:
                time.sleep(0)  # sometimes let the worker win the race
            claimed += lane.claim(call)
            assert call.wait(1.0) == index
            # The slot is free again (a double release would have killed the worker, and the
            # next submit would time out).
            deadline = time.monotonic() + 1.0
            while lane.busy and time.monotonic() < deadline:
                time.sleep(0.001)
            assert not lane.busy
        assert runs == list(range(300))
        assert 0 < claimed
    finally:
        lane.close()


def test_slow_inline_provider_does_not_delay_a_bounded_one_on_its_lane(fakes: Any, make_router: Any) -> None:
    # The first route runs inline and works for 0.3 s; the second, on its lane, must not wait
    # for it: its worker picks it up meanwhile (the caller only claims calls not yet started).
    slow = Bounded("slow", hits_of(fakes, "slow"), work=0.3)
    quick = Bounded("quick", hits_of(fakes, "quick"))
    router = make_router({"slow": slow, "quick": quick})
    policy = SearchPolicy([Route("slow", timeout=1.0), Route("quick", timeout=0.2)])
    result = router.search(SearchQuery("q"), policy)
    assert sorted(h.id for h in result.hits) == ["quick-1", "slow-1"]
    outcomes = {r.provider: r.outcome for r in result.provider_recalls}
    assert outcomes == {"quick": "success", "slow": "success"}
    me = threading.get_ident()
    assert slow.threads == [me] and quick.threads != [me]


def test_hung_lane_provider_next_to_an_inline_one_is_cut_at_its_budget(fakes: Any, make_router: Any) -> None:
    stuck = fakes.HangingProvider("stuck")
    bounded = Bounded("local", hits_of(fakes, "local"), work=0.05)
    router = make_router({"local": bounded, "stuck": stuck})
    policy = SearchPolicy([Route("local", timeout=1.0), Route("stuck", timeout=0.2)])
    for _ in range(2):
        started = time.monotonic()
        result = router.search(SearchQuery("q"), policy)
        assert time.monotonic() - started < 0.2 + SLACK
        assert [h.id for h in result.hits] == ["local-1"]
        outcomes = {r.provider: r.outcome for r in result.provider_recalls}
        assert outcomes == {"local": "success", "stuck": "timeout"}
    me = threading.get_ident()
    # The first recall ran it inline; in the second the stuck lane is still busy and must be
    # waited for within its budget, so the bounded call went to its own lane instead.
    assert bounded.threads[0] == me and bounded.threads[1] != me


def test_slow_inline_provider_does_not_delay_the_lane_ones(fakes: Any, make_router: Any) -> None:
    # The inline call works for its whole 0.3 s budget and is stopped at it; the other
    # provider, on its lane, answers meanwhile and is not reported late.
    slow = Bounded("slow", hits_of(fakes, "slow"), work=5.0)
    quick = fakes.ScriptedProvider("quick", hits_of(fakes, "quick"), delay=0.05)
    router = make_router({"slow": slow, "quick": quick})
    policy = SearchPolicy([Route("quick", timeout=0.2), Route("slow", timeout=0.3)])
    started = time.monotonic()
    result = router.search(SearchQuery("q"), policy)
    elapsed = time.monotonic() - started
    assert 0.3 <= elapsed < 0.3 + SLACK
    assert slow.threads[-1] == threading.get_ident()
    assert [h.id for h in result.hits] == ["quick-1"]
    outcomes = {r.provider: r.outcome for r in result.provider_recalls}
    assert outcomes == {"quick": "success", "slow": "timeout"}


def test_result_after_the_budget_is_a_timeout(fakes: Any, make_router: Any) -> None:
    # A provider that breaks its promise delays the caller (why only deadline-bound providers
    # may declare it), but its late answer is not used, exactly as on a lane.
    late = Bounded("late", hits_of(fakes, "late"), work=5.0, overrun=0.1)
    router = make_router({"late": late})
    result = router.search(SearchQuery("q"), SearchPolicy([Route("late", timeout=0.1)]))
    assert result.hits == []
    assert result.provider_recalls[0].outcome == "timeout"
    assert "timed out after 100ms" in result.provider_errors[0].error


def test_caller_cancel_reaches_the_inline_call(fakes: Any, make_router: Any) -> None:
    bounded = Bounded("local", hits_of(fakes, "local"), work=5.0)
    router = make_router({"local": bounded})
    overall = Deadline.after(10)
    threading.Timer(0.1, overall.cancel).start()
    started = time.monotonic()
    result = router.search(SearchQuery("q"), SearchPolicy([Route("local", timeout=5.0)]), overall)
    assert time.monotonic() - started < 0.1 + SLACK
    assert bounded.threads[-1] == threading.get_ident()
    assert bounded.deadlines[-1].cancelled
    assert result.provider_recalls[0].outcome == "timeout"
    assert "cancelled" in result.provider_errors[0].error
    try:
        bounded.deadlines[-1].check("search")
    except DeadlineExceeded as exc:
        assert exc.cancelled
    else:  # pragma: no cover - the assertion above already failed
        raise AssertionError("a cancelled deadline must fail check()")


def test_one_call_per_provider_still_holds_inline(fakes: Any, make_router: Any) -> None:
    # Two callers at once: the second finds the provider's slot taken by the first (running
    # inline on the first caller's thread) and waits for it within its own budget.
    bounded = Bounded("local", hits_of(fakes, "local"), work=0.3)
    router = make_router({"local": bounded})
    policy = SearchPolicy([Route("local", timeout=0.1)])
    long_policy = SearchPolicy([Route("local", timeout=2.0)])
    first = threading.Thread(target=router.search, args=(SearchQuery("q"), long_policy))
    first.start()
    time.sleep(0.05)
    started = time.monotonic()
    result = router.search(SearchQuery("q"), policy)
    assert time.monotonic() - started < 0.1 + SLACK
    first.join()
    assert bounded.max_active == 1
    recall = result.provider_recalls[0]
    assert recall.outcome == "timeout" and recall.bulkhead_busy


def test_writes_to_a_bounded_provider_take_the_inline_path_too(fakes: Any, make_router: Any) -> None:
    bounded = Bounded("local", [])
    other = fakes.MemoryProvider("other")
    router = make_router({"local": bounded, "other": other})
    policy = PutPolicy([Route("local", timeout=1.0), Route("other", timeout=1.0)])
    result = router.put([MemoryItem("a fact")], policy)
    assert sorted(r.provider for r in result.refs) == ["local", "other"]
    assert bounded.threads == [threading.get_ident()]
