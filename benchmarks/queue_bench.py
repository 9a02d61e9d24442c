"""Capture-queue benchmark: append latency per event (the hook's ack point) and delivery throughput.

Run: ``uv run python benchmarks/queue_bench.py [--events N] [--episodes N]``.  Prints medians and
p95 from real SQLite files in a temp dir; delivery goes through the real Router to an
in-memory ID-honouring provider (so it measures the queue and router, not a backend) and to
the real SQLite provider when it is installed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from paxm_core import Deadline, MemoryItem, MemoryRef
from paxm_core.capture import CaptureEvent, CaptureQueue, DeliveryWorker
from paxm_core.capture._inbox import append_raw
from paxm_core.router import Router


class MemoryProvider:
    def __init__(self, name: str) -> None:
        self._name = name
        self.stored: dict[str, MemoryItem] = {}

    @property
    def name(self) -> str:
        return self._name

    def search(self, query: Any, deadline: Deadline) -> list[Any]:
        return []

    def health(self, deadline: Deadline) -> None:
        return None

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        self.stored[item.id] = item
        return MemoryRef(self._name, item.id)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def text(n: int) -> str:
    return f"User input {n}: please refactor the billing module and keep the public API stable. " * 4


def bench_append(root: Path, events: int) -> None:
    q = CaptureQueue(root / "append.sqlite", routes={"default": ["mem"]})
    created = datetime.now(UTC)
    times: list[float] = []
    for n in range(events):
        event = CaptureEvent(
            f"evt_{n}", f"session-{n % 10}", MemoryItem(text=text(n), created_at=created), terminal=n % 4 == 3
        )
        start = time.perf_counter()
        q.append(event)
        times.append(time.perf_counter() - start)
    q.close()
    plain = [t for i, t in enumerate(times) if i % 4 != 3]
    sealing = [t for i, t in enumerate(times) if i % 4 == 3]
    print(
        f"append (open event)      n={len(plain):5d}  median {statistics.median(plain) * 1e3:6.3f} ms"
        f"  p95 {pct(plain, 0.95) * 1e3:6.3f} ms"
    )
    print(
        f"append (turn_end, seals) n={len(sealing):5d}  median {statistics.median(sealing) * 1e3:6.3f} ms"
        f"  p95 {pct(sealing, 0.95) * 1e3:6.3f} ms"
    )
    raw: list[float] = []
    path = root / "inbox.sqlite"
    for n in range(min(events, 500)):
        start = time.perf_counter()
        append_raw(path, f"evt_{n}", "codex", "user_input", b'{"prompt": "%s"}' % text(n).encode())
        raw.append(time.perf_counter() - start)
    print(
        f"append_raw (hook client, connect+commit) n={len(raw):4d}  median {statistics.median(raw) * 1e3:6.3f} ms"
        f"  p95 {pct(raw, 0.95) * 1e3:6.3f} ms"
    )


def bench_delivery(root: Path, name: str, provider: Any, episodes: int, sessions: int) -> None:
    path = root / f"deliver-{name}.sqlite"
    q = CaptureQueue(path, routes={"default": [provider.name]})
    created = datetime.now(UTC)
    for n in range(episodes):
        session = f"session-{n % sessions}"
        q.append(CaptureEvent(f"e{n}a", session, MemoryItem(text=text(n), created_at=created)))
        q.append(CaptureEvent(f"e{n}b", session, MemoryItem(text=text(n), created_at=created), terminal=True))
    router = Router({provider.name: provider})
    worker = DeliveryWorker(q, router)
    start = time.perf_counter()
    report = worker.flush(timeout=600)
    elapsed = time.perf_counter() - start
    assert report.ok, report
    print(
        f"delivery {name:<22} {episodes} episodes / {sessions} sessions: {elapsed:6.2f} s"
        f"  = {episodes / elapsed:7.1f} episodes/s"
    )
    router.close()
    q.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--episodes", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="paxm-queue-bench-") as tmp:
        root = Path(tmp)
        bench_append(root, args.events)
        bench_delivery(root, "memory (router only)", MemoryProvider("mem"), args.episodes, 20)
        from paxm_core.plugins import get_plugin_manager
        from paxm_core.provider_config import ProviderConfig

        try:
            spec = get_plugin_manager().provider_type("sqlite")
        except Exception:  # provider plugin not installed: router-only numbers are still useful
            return
        real = spec.factory("sqlite", ProviderConfig(type="sqlite", enabled=True, path=str(root / "memories.sqlite")))
        bench_delivery(root, "sqlite provider", real, args.episodes, 20)


if __name__ == "__main__":
    main()
