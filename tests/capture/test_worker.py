"""DeliveryWorker over the real Router: fault injection, ordering, concurrency, cleanup, telemetry."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from _capture_helpers import FakeProvider, Recorder, event, route_profiles, wait_for

from paxm_core.capture import DeliveryWorker, provider_concurrency
from paxm_core.config.model import CaptureQueueConfig


class BrokenTelemetry:
    def record(self, event: dict[str, Any]) -> None:
        raise RuntimeError("disk full")


def run_until_idle(worker: DeliveryWorker, clock: Any, rounds: int = 40) -> None:
    """Drive the worker synchronously, jumping the clock over each backoff."""
    for _ in range(rounds):
        worker.run_once()
        due = worker.queue.next_due_in()
        if due is None:
            return
        clock.advance(due + 0.001)


def test_flaky_provider_is_delivered_with_attempts_recorded(open_queue, make_router, clock, queue_path) -> None:
    flaky = FakeProvider("mem0", fail_times=2)
    q = open_queue(routes={"default": ["mem0"]}, clock=clock, retry_min=1.0)
    telemetry = Recorder()
    worker = DeliveryWorker(q, make_router(flaky), telemetry=telemetry)
    q.append(event("e1", terminal=True))
    run_until_idle(worker, clock)
    assert len(flaky.stored) == 1
    status = q.status()
    assert status.deliveries == {"delivered": 1} and status.episodes == {"delivered": 1}
    with sqlite3.connect(queue_path) as conn:
        attempts, ref, delivered_at, first, last, error = conn.execute(
            "SELECT attempts, provider_ref, delivered_at, first_attempt_at, last_attempt_at, last_error"
            " FROM capture_deliveries"
        ).fetchone()
    assert attempts == 3 and ref == next(iter(flaky.stored)) and delivered_at and first < last and error == ""
    kinds = [(e["hook_event"], e["success"]) for e in telemetry.events]
    assert kinds == [("delivery", False), ("delivery", False), ("delivery", True)]
    assert telemetry.events[-1]["source"] == "capture_queue" and telemetry.events[-1]["passive_write_samples"] == 1
    assert "injected failure 1" in telemetry.events[0]["error"]


def test_backoff_schedule_is_respected(open_queue, make_router, clock) -> None:
    flaky = FakeProvider("mem0", fail_times=3)
    q = open_queue(routes={"default": ["mem0"]}, clock=clock, retry_min=1.0)
    worker = DeliveryWorker(q, make_router(flaky))
    q.append(event("e1", terminal=True))
    waits = []
    for _ in range(3):
        assert worker.run_once()[0].state == "retry"
        assert worker.run_once() == []  # not due yet
        waits.append(q.next_due_in())
        clock.advance(waits[-1])
    assert waits == [1.0, 2.0, 4.0]
    assert worker.run_once()[0].state == "delivered"


def test_always_failing_provider_goes_dead_visible_and_revivable(open_queue, make_router, clock, queue_path) -> None:
    from click.testing import CliRunner

    from paxm_core.cli import cli

    broken = FakeProvider("mem0", always_fail=True)
    q = open_queue(routes={"default": ["mem0"]}, clock=clock, retry_min=0.01, max_attempts=4)
    worker = DeliveryWorker(q, make_router(broken))
    q.append(event("e1", terminal=True))
    run_until_idle(worker, clock)
    status = q.status()
    assert status.deliveries == {"dead": 1} and status.episodes == {"dead": 1}
    assert broken.calls == 4 and status.dead[0].attempts == 4
    assert "injected failure 4" in status.dead[0].last_error

    config = queue_path.parent.parent / "config.yaml"
    config.write_text(f"capture_queue:\n  path: {queue_path}\n")
    runner = CliRunner()
    shown = runner.invoke(cli, ["--config", str(config), "queue", "status"])
    assert shown.exit_code == 0, shown.output
    assert "mem0 (4 attempts): " in shown.output and "injected failure 4" in shown.output
    revived = runner.invoke(cli, ["--config", str(config), "queue", "retry", "--dead"])
    assert revived.exit_code == 0 and "Revived 1 dead delivery." in revived.output
    assert q.status().deliveries == {"retry": 1} and q.status().episodes == {"pending": 1}
    broken.always_fail = False
    run_until_idle(worker, clock)
    assert q.status().deliveries == {"delivered": 1} and len(broken.stored) == 1


def test_hanging_provider_does_not_block_others(open_queue, make_router) -> None:
    release = threading.Event()
    stuck = FakeProvider("slow", hang=release)
    fast = FakeProvider("fast")
    q = open_queue(routes={"default": ["slow", "fast"]}, retry_min=0.05)
    profiles = route_profiles(default=[("slow", 0.2), ("fast", 5.0)])
    worker = DeliveryWorker(q, make_router(stuck, fast), write_profiles=profiles, tick=0.05).start()
    try:
        for n in range(5):
            q.append(event(f"e{n}", f"s{n}", terminal=True))
            worker.notify()
        assert wait_for(lambda: len(fast.stored) == 5, timeout=10)
        # the provider has the items; the queue marks them delivered right after it returns
        assert wait_for(lambda: q.status().deliveries.get("delivered") == 5, timeout=10)
        assert stuck.stored == {}
        status = q.status()
        assert sum(status.deliveries.values()) == 10 and "dead" not in status.deliveries
    finally:
        release.set()
        worker.stop(timeout=5)


def test_order_is_strict_per_provider_and_session_but_providers_independent(open_queue, make_router, clock) -> None:
    a = FakeProvider("a", fail_times=1)
    b = FakeProvider("b")
    q = open_queue(routes={"default": ["a", "b"]}, clock=clock, retry_min=5.0)
    worker = DeliveryWorker(q, make_router(a, b))
    for n in range(3):
        q.append(event(f"e{n}", "same", text=f"turn {n}", terminal=True))
        clock.advance(0.001)
    first = worker.run_once()
    # b delivers its head, a fails its head; nothing later of the session is claimed for a
    assert sorted((o.provider, o.state) for o in first) == [("a", "retry"), ("b", "delivered")]
    worker.run_once()
    worker.run_once()
    assert [i.text for i in b.puts] == ["turn 0", "turn 1", "turn 2"]
    assert a.puts == []  # a's later episodes wait behind its failed head
    clock.advance(5.0)
    run_until_idle(worker, clock)
    assert [i.text for i in a.puts] == ["turn 0", "turn 1", "turn 2"]


def test_per_provider_concurrency_limit(open_queue, make_router) -> None:
    release = threading.Event()
    slow = FakeProvider("mem0", hang=release)
    q = open_queue(routes={"default": ["mem0"]})
    worker = DeliveryWorker(q, make_router(slow), CaptureQueueConfig(provider_concurrency={"mem0": 2}), tick=0.05)
    for n in range(6):
        q.append(event(f"e{n}", f"s{n}", terminal=True))
    worker.start()
    try:
        assert wait_for(lambda: q.status().deliveries.get("delivering") == 2, timeout=5)
        time.sleep(0.2)
        assert q.status().deliveries.get("delivering") == 2  # never more than the limit in flight
    finally:
        release.set()
    assert wait_for(lambda: q.status().deliveries == {"delivered": 6}, timeout=10)
    worker.stop()
    assert worker.concurrency("mem0") == 2 and worker.concurrency("zep") == 4


def test_concurrency_defaults() -> None:
    assert provider_concurrency(None, "sqlite") == 1
    assert provider_concurrency({}, "mem0") == 4
    assert provider_concurrency({"default": 2, "sqlite": 3}, "sqlite") == 3
    assert provider_concurrency({"default": 2}, "zep") == 2


def test_flush_seals_delivers_and_reports(open_queue, make_router) -> None:
    sink = FakeProvider("sqlite")
    q = open_queue(routes={"default": ["sqlite"]})
    for n in range(4):
        q.append(event(f"e{n}", f"s{n % 2}"))
    report = DeliveryWorker(q, make_router(sink)).flush(timeout=10, seal_open=True)
    assert report.ok and report.sealed == 2 and report.delivered == 2 and report.remaining == 0
    assert sorted(i.text for i in sink.puts) == ["text of e0\n\ntext of e2", "text of e1\n\ntext of e3"]


def test_flush_times_out_and_reports_what_is_left(open_queue, make_router) -> None:
    broken = FakeProvider("mem0", always_fail=True)
    q = open_queue(routes={"default": ["mem0"]}, retry_min=30)
    q.append(event("e1", terminal=True))
    worker = DeliveryWorker(q, make_router(broken))
    report = worker.flush(timeout=2.0)
    assert not report.ok and report.timed_out and report.remaining == 1 and report.failed == 1
    # the same worker flushes again once the provider recovers (its loop restarts cleanly)
    broken.always_fail = False
    again = worker.flush(timeout=10.0)
    assert again.ok and again.delivered == 1 and len(broken.stored) == 1
    worker.start()
    worker.stop()
    worker.start()
    worker.stop()


def test_expired_episodes_sealed_by_the_loop(open_queue, make_router) -> None:
    sink = FakeProvider("sqlite")
    q = open_queue(routes={"default": ["sqlite"]})
    worker = DeliveryWorker(q, make_router(sink), CaptureQueueConfig(max_episode_age=0.1), tick=0.05).start()
    try:
        q.append(event("e1"))  # never terminated
        worker.notify()
        assert wait_for(lambda: len(sink.stored) == 1, timeout=5)
        assert next(iter(sink.stored.values())).metadata["paxm_episode_complete"] == "false"
    finally:
        worker.stop()


class CleanupRouter:
    """Wraps a Router to count and slow down expired-memory cleanups."""

    def __init__(self, router: Any) -> None:
        self.router = router
        self.cleanups = 0
        self.lock = threading.Lock()

    def put_to_provider(self, provider: str, items: list[Any], timeout: float) -> list[Any]:
        return self.router.put_to_provider(provider, items, timeout)  # type: ignore[no-any-return]

    def cleanup_expired(self, limit: int = 500) -> int:
        with self.lock:
            self.cleanups += 1
        time.sleep(0.2)
        return self.router.cleanup_expired(limit)  # type: ignore[no-any-return]


def test_cleanup_is_scheduled_after_deliveries_and_coalesced(open_queue, make_router) -> None:
    sink = FakeProvider("sqlite")
    router = CleanupRouter(make_router(sink))
    q = open_queue(routes={"default": ["sqlite"]})
    worker = DeliveryWorker(q, router, cleanup_interval=0.0, tick=0.05).start()
    try:
        for n in range(20):
            q.append(event(f"e{n}", f"s{n}", terminal=True))
            worker.notify()
        assert wait_for(lambda: len(sink.stored) == 20, timeout=10)
    finally:
        worker.stop()
    # 20 successful deliveries, but cleanups overlap-coalesce while one runs for 0.2 s
    assert 1 <= router.cleanups < 20 and worker.cleanup_runs == router.cleanups


def test_failing_telemetry_never_fails_delivery(open_queue, make_router) -> None:
    sink = FakeProvider("sqlite")
    q = open_queue(routes={"default": ["sqlite"]})
    worker = DeliveryWorker(q, make_router(sink), telemetry=BrokenTelemetry())
    q.append(event("e1", terminal=True))
    assert [o.state for o in worker.run_once()] == ["delivered"]


def test_route_timeout_comes_from_write_profile(open_queue, make_router) -> None:
    seen: list[float] = []

    class TimeoutRouter:
        def put_to_provider(self, provider: str, items: list[Any], timeout: float) -> list[Any]:
            from paxm_core import MemoryRef

            seen.append(timeout)
            return [MemoryRef(provider, items[0].id)]

    q = open_queue(routes={"default": ["mem0"], "other": ["zep"]})
    profiles = route_profiles(default=[("mem0", 2.5)])
    worker = DeliveryWorker(q, TimeoutRouter(), write_profiles=profiles)
    q.append(event("e1", terminal=True))
    q.append(event("e2", "s2", profile="other", terminal=True))
    worker.run_once()
    assert sorted(seen) == [2.5, 30.0]


def test_provider_returning_no_ref_is_a_failure(open_queue, tmp_path: Path) -> None:
    class NoRefRouter:
        def put_to_provider(self, provider: str, items: list[Any], timeout: float) -> list[Any]:
            return []

    q = open_queue(routes={"default": ["mem0"]})
    q.append(event("e1", terminal=True))
    (outcome,) = DeliveryWorker(q, NoRefRouter()).run_once()
    assert outcome.state == "retry" and "returned no ref" in outcome.error
