"""Latency helpers the benchmark runners share: timing one call many times, a percentile, one
report line of a median and p95 against a baseline."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def timed(fn: Callable[[], object], rounds: int, *, warmup: int = 0) -> list[float]:
    """Seconds each of ``rounds`` calls of ``fn`` took, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def numbered(fn: Callable[[int], object]) -> Callable[[], object]:
    """``fn`` called with 0, 1, 2 ... on successive calls (each timed call writes a new row)."""
    count = iter(range(10**12))
    return lambda: fn(next(count))


def median_ms(samples: list[float]) -> float:
    """The median of ``samples`` (seconds), in milliseconds."""
    return statistics.median(samples) * 1000.0


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def line(name: str, values: list[float], baseline: list[float]) -> None:
    """Print the median and p95 of ``values`` beside the median of ``baseline`` and their ratio."""
    med, base = statistics.median(values), statistics.median(baseline)
    print(
        f"{name:<34} n={len(values):5d}  median {med * 1e3:7.3f} ms  p95 {pct(values, 0.95) * 1e3:7.3f} ms"
        f"  | baseline {base * 1e3:7.3f} ms  ratio {med / base:5.2f}x"
    )
