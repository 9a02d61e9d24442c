"""Router overhead per recall with in-memory providers.

Measures the median wall time (and process CPU time) of ``Router.search`` against calling the
providers' ``search`` directly with the same query, timed alternately, for 1 and 3 providers
returning 10 candidates each (every call on its provider's lane), plus a 3-route write.  The
budget for 3 providers is 0.5 ms of overhead.
Run: ``uv run --all-packages python benchmarks/router_bench.py [--rounds N]`` (``--rounds 300``
is a short run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import record  # noqa: E402
from timing import timed  # noqa: E402

from paxm_core import Deadline, MemoryHit, MemoryItem, MemoryRef, SearchQuery
from paxm_core.router import PutPolicy, Route, Router, SearchPolicy

NOW = datetime.now(UTC)


class InMemory:
    """Returns ten prebuilt hits (copies, as a real provider builds fresh objects)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._hits = [
            MemoryHit(
                provider=name,
                id=f"{name}-{i}",
                text=f"{name} memory number {i} about deploys",
                relevance=1.0 - i * 0.07,
                score=1.0 - i * 0.07,
                created_at=NOW - timedelta(hours=i),
                metadata={"paxm_scope_type": "personal", "paxm_scope_id": "ann", "paxm_user_id": "ann"},
            )
            for i in range(10)
        ]

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        return [h.copy() for h in self._hits[: query.limit or None]]

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        return MemoryRef(self.name, item.id or "x")

    def health(self, deadline: Deadline) -> None:
        return None


def median_us(fn: Callable[[], object], rounds: int) -> float:
    # warm-up: start worker threads, fill caches
    return statistics.median(timed(fn, rounds, warmup=min(200, rounds))) * 1e6


def interleaved(a: Callable[[], object], b: Callable[[], object], rounds: int) -> tuple[float, float, float, float]:
    """Median wall and CPU µs of ``a`` and ``b``, timed alternately (A B B A ...) so load drifts hit both.

    CPU time is the whole process's (``time.process_time``), so work done on the router's lane
    threads counts too.
    """
    for _ in range(min(200, rounds)):  # warm-up: start worker threads, fill caches
        a()
        b()
    wall: tuple[list[int], list[int]] = ([], [])
    cpu: tuple[list[int], list[int]] = ([], [])
    for index in range(rounds):
        for which in (0, 1) if index % 2 == 0 else (1, 0):
            fn = a if which == 0 else b
            c0, w0 = time.process_time_ns(), time.perf_counter_ns()
            fn()
            w1, c1 = time.perf_counter_ns(), time.process_time_ns()
            wall[which].append(w1 - w0)
            cpu[which].append(c1 - c0)
    med = statistics.median
    return med(wall[0]) / 1000, med(wall[1]) / 1000, med(cpu[0]) / 1000, med(cpu[1]) / 1000


def bench_search(query: SearchQuery, count: int, timeout: float | None, rounds: int) -> tuple[float, float]:
    providers = {f"p{i}": InMemory(f"p{i}") for i in range(count)}
    router = Router(providers)
    routes = [Route(n, timeout=timeout) for n in providers]
    policy = SearchPolicy(routes, limit=3, min_relevance=0.25, min_score=0.25)
    deadline = Deadline.none()
    direct, routed, direct_cpu, routed_cpu = interleaved(
        lambda: [p.search(query, deadline) for p in providers.values()], lambda: router.search(query, policy), rounds
    )
    label = "no route timeout" if timeout is None else f"route timeout {timeout:g}s"
    print(
        f"  {count} provider(s), {label:34}: direct {direct:6.1f} µs  router {routed:6.1f} µs  "
        f"overhead {routed - direct:6.1f} µs  ratio {routed / direct:4.1f}x  (cpu: direct {direct_cpu:6.1f} "
        f"router {routed_cpu:6.1f} overhead {routed_cpu - direct_cpu:6.1f})"
    )
    router.close()
    return direct, routed


def handoff_us(rounds: int) -> tuple[float, float]:
    """Median wall and CPU µs of a bare round trip to a waiting thread and back.

    The floor for any call that must run on a thread of its own (a provider that may hang):
    one queue put that wakes the worker, one lock release that wakes the caller.
    """
    import _thread
    import queue
    import threading

    jobs: queue.SimpleQueue[_thread.LockType | None] = queue.SimpleQueue()

    def worker() -> None:
        while (done := jobs.get()) is not None:
            done.release()

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()

    def round_trip() -> None:
        done = _thread.allocate_lock()
        done.acquire()
        jobs.put(done)
        done.acquire()

    wall, _, cpu, _ = interleaved(round_trip, lambda: None, rounds)
    jobs.put(None)
    thread.join()
    return wall, cpu


#: The router's own cost per recall over three in-process providers may be at most this (ms).
BUDGET_MS = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3000, help="timed recalls per case (300: a short run)")
    rounds = parser.parse_args().rounds
    query = SearchQuery("deploys", limit=9)
    print(f"router overhead per recall, median of {rounds} rounds (10 candidates per provider, limit 3)")
    print(f"  (load average {os.getloadavg()[0]:.2f}; cpu = process CPU time, lane threads included)")
    for count, timeout in ((1, None), (1, 1.0), (3, None), (3, 1.0)):
        direct, routed = bench_search(query, count, timeout, rounds)
        if count == 3:
            over = (routed - direct) / 1000
            label = "no route timeout" if timeout is None else f"timeout {timeout:g}s"
            record(
                f"router overhead per recall, 3 providers ({label})",
                over,
                "ms",
                f"direct calls {direct / 1000:.3f} ms",
                f"<= {BUDGET_MS} ms",
                over <= BUDGET_MS,
            )
    providers = {f"p{i}": InMemory(f"p{i}") for i in range(3)}
    router = Router(providers)
    put_policy = PutPolicy([Route(n, timeout=5.0) for n in providers], tier="ltm")
    item = MemoryItem("a fact worth keeping", created_at=NOW)
    write = median_us(lambda: router.put([item], put_policy), rounds)
    print(f"  write to 3 routes (attribution, admission, fan-out): {write:8.1f} µs")
    router.close()
    wall, cpu = handoff_us(rounds)
    print(f"  bare thread hand-off round trip (the floor of one call on a lane): {wall:6.1f} µs (cpu {cpu:6.1f})")


if __name__ == "__main__":
    main()
