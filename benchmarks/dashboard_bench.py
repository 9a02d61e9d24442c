"""Dashboard benchmark: API latency over a full event log.

Run: ``uv run python benchmarks/dashboard_bench.py [--events N] [--rounds N] [--quick]``.

The log is filled to ``--events`` events (default 10,000, what the views search; about the
3 × 1 MiB the log keeps by default) with realistic recalls, hook writes and deliveries over 30
days, through the telemetry store's own writer. Each API route is then called through the real
Starlette app (in process, over httpx's ASGI transport, JSON encoding included). Each case prints
its median and p95 next to a baseline and the ratio. The baseline is ``Telemetry.tail(N)``, the
raw read of the same events that ``paxm logs --tail N`` does, so the ratio is what filtering,
grouping and encoding add on top of reading the log.

Files live in a temp dir. The machine is shared, so compare ratios rather than absolutes.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from paxm_core.config import load_config
from paxm_core.dashboard.app import create_app
from paxm_core.dashboard.data import DashboardData
from paxm_core.telemetry import Telemetry
from paxm_core.telemetry.events import normalize_event

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import line, timed  # noqa: E402


def fill(telemetry: Telemetry, events: int) -> None:
    """Write ``events`` events spread over 30 days (metrics updated once at the end, for speed)."""
    now = datetime.now(UTC)
    metrics = telemetry.store.load_metrics()
    with telemetry.store.locked():
        for n in range(events):
            when = now - timedelta(seconds=(events - n) * (30 * 86400 / events))
            session = f"codex/workspace//work/app{n % 7}/session/s-{n // 40}"
            kind = ("hook_recall", "hook_write", "hook_delivery", "recall")[n % 4]
            event: dict[str, Any] = {
                "time": when,
                "kind": kind,
                "source": {"hook_recall": "hook", "hook_write": "hook", "hook_delivery": "capture_queue"}.get(
                    kind, "cli"
                ),
                "target": "codex" if kind.startswith("hook_") else "",
                "hook_event": "user_input" if kind != "hook_delivery" else "delivery",
                "profile": "passive" if kind == "hook_recall" else "default",
                "success": n % 23 != 0,
                "duration_ms": 5 + n % 40,
                "query": f"how do we deploy service {n % 97} on tuesday" if "recall" in kind else None,
                "hit_count": n % 3 if "recall" in kind else 0,
                "recall_hits": [
                    {"provider": "sqlite", "id": f"m{n}-{i}", "score": 0.9, "tier": "ltm", "text": f"memory {n} {i}"}
                    for i in range(n % 3)
                ]
                if "recall" in kind
                else [],
                "session_key": session if kind == "hook_delivery" else "",
                "episode_id": f"ep_{n}" if kind == "hook_delivery" else "",
                "provider": "sqlite" if kind == "hook_delivery" else "",
            }
            if event["query"] is None:
                del event["query"]
            clean = normalize_event(event, capture_preview=True, preview_chars=80)
            telemetry.store.append_many([clean])
            metrics.update_many([clean], 30)
        telemetry.store.save_metrics(metrics)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="2,000 events, 8 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.events, args.rounds = 2_000, 8
    with tempfile.TemporaryDirectory(prefix="paxm-dashboard-bench-") as tmp:
        config_path = Path(tmp) / "config.yaml"
        config_path.write_text(
            "telemetry:\n  capture_query_preview: true\n  max_event_file_bytes: 20000000\n", encoding="utf-8"
        )
        config = load_config(config_path)
        telemetry = Telemetry(config)
        started = time.perf_counter()
        fill(telemetry, args.events)
        size = int(telemetry.store.storage_info()["event_bytes"])
        print(f"filled {args.events} events ({size / 1e6:.1f} MB) in {time.perf_counter() - started:.1f}s")
        data = DashboardData(config)
        token = "bench-token"
        app = create_app(data, token=token, port=7465)
        baseline = timed(lambda: telemetry.tail(args.events), args.rounds, warmup=1)
        print(
            f"{'baseline: Telemetry.tail(N)':<34} n={len(baseline):5d}"
            f"  median {statistics.median(baseline) * 1e3:7.3f} ms"
        )

        async def run() -> None:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:7465", headers={"x-paxm-token": token}
            ) as client:
                cases = [
                    ("GET /api/summary?days=30", "/api/summary", {"days": "30"}),
                    ("GET /api/events (first page)", "/api/events", {}),
                    ("GET /api/events?q=&mode=passive", "/api/events", {"q": "tuesday", "mode": "passive"}),
                    ("GET /api/events?hit_q=", "/api/events", {"hit_q": "memory 12", "kind": "recall,hook_recall"}),
                    ("GET /api/facets", "/api/facets", {}),
                    ("GET /api/sessions", "/api/sessions", {}),
                ]
                for name, path, params in cases:
                    times: list[float] = []
                    for _ in range(args.rounds + 1):
                        start = time.perf_counter()
                        response = await client.get(path, params=params)
                        times.append(time.perf_counter() - start)
                        assert response.status_code == 200, response.text
                    line(name, times[1:], baseline)

        asyncio.run(run())


if __name__ == "__main__":
    main()
