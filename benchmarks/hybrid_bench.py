"""Benchmarks of the sqlite-hybrid provider: embedding latency, recall latency, resident memory.

Run from the repository root::

    uv run python benchmarks/hybrid_bench.py            # 10k and 100k memories
    uv run python benchmarks/hybrid_bench.py --quick    # 2k memories (smoke)

Baseline: the plain ``sqlite`` provider answering the same query on the same database file.
Memories are written through ``SQLiteProvider.put_batch`` (the real index); embedding 100k
texts would take about an hour on a shared core, so the vector table is filled with real
vectors of ``--embed`` distinct texts, each stored many times with a small random rotation
(the cosine scan costs the same for any unit vectors).  Embedding latency is measured on real
texts separately.  Resident memory is the process's VmRSS before the model loads and after
the model and the vector cache are loaded.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider

NO_LIMIT = Deadline.none()
SUBJECTS = [
    "the billing service",
    "the CI pipeline",
    "the staging cluster",
    "the web frontend",
    "the search API",
    "the nightly backup",
    "the auth middleware",
    "the release script",
    "the mobile app",
    "the data importer",
]
FACTS = [
    "times out after {n} seconds under load",
    "is deployed by the platform team every {n} days",
    "keeps its config in settings/{n}.toml",
    "logs to the structured JSON sink on port {n}",
    "needs the feature flag flag_{n} before it starts",
    "was migrated to Postgres {n} last spring",
    "caches responses for {n} minutes in Redis",
    "is owned by team {n} and paged through #incidents",
]
#: Semantic-path queries (no memory holds all their words) and one exact-path control.
QUERIES = [
    "what makes checkout slow when traffic spikes?",
    "who looks after the login layer?",
    "how long are answers kept in memory?",
    "where do the application settings live?",
]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def corpus(n: int, rng: random.Random) -> list[str]:
    return [
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(FACTS).format(n=rng.randint(1, 99999))} (note {i})."
        for i in range(n)
    ]


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000.0


def bench_embedding(texts: list[str], rounds: int) -> None:
    from paxm_provider_sqlite_hybrid.embedder import get_embedder

    before = rss_mb()
    started = time.perf_counter()
    emb = get_embedder()
    emb.embed(["warm up"])
    print(f"model load: {(time.perf_counter() - started) * 1000:.0f} ms, +{rss_mb() - before:.0f} MB RSS")
    single = []
    for text in texts[:rounds]:
        t = time.perf_counter()
        emb.embed([text])
        single.append(time.perf_counter() - t)
    t = time.perf_counter()
    emb.embed(texts[:rounds])
    batch = (time.perf_counter() - t) / rounds
    print(
        f"embed one memory: median {statistics.median(single) * 1000:.1f} ms, p95 {pct(single, 0.95):.1f} ms;"
        f" batched {batch * 1000:.1f} ms/text"
    )


def fill_vectors(db: Path, distinct: int, rng: random.Random) -> None:
    import sqlite3

    import numpy as np

    from paxm_provider_sqlite_hybrid.embedder import MODEL_ID, get_embedder
    from paxm_provider_sqlite_hybrid.vectors import ensure_schema, store_vectors

    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT rowid, text FROM memories ORDER BY rowid").fetchall()
    base = get_embedder().embed([text for _, text in rows[:distinct]])
    noise = np.random.default_rng(rng.randint(0, 2**31))
    ensure_schema(conn)
    out = []
    for i, (rowid, _) in enumerate(rows):
        vec = base[i % len(base)] + noise.normal(0, 0.02, base.shape[1]).astype(np.float32)
        out.append((int(rowid), (vec / np.linalg.norm(vec)).astype(np.float32).tobytes()))
    with conn:
        store_vectors(conn, MODEL_ID, out)
    conn.close()


def bench_size(n: int, distinct: int, rounds: int, root: Path, rng: random.Random) -> None:
    from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider

    db = root / f"hybrid-{n}.sqlite"
    plain = SQLiteProvider("plain", ProviderConfig(path=str(db)))
    texts = corpus(n, rng)
    for start in range(0, n, 1000):
        plain.put_batch([MemoryItem(text=t, tier="ltm") for t in texts[start : start + 1000]], NO_LIMIT)
    fill_vectors(db, min(distinct, n), rng)
    before = rss_mb()
    hybrid = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(db)))
    hybrid.search(SearchQuery(QUERIES[0], limit=3), Deadline.after(30))  # loads the vector cache
    cache_mb = rss_mb() - before
    results: dict[str, tuple[list[float], list[float]]] = {}
    for query in [*QUERIES, texts[7]]:
        base_t, hyb_t = [], []
        for _ in range(rounds):
            t = time.perf_counter()
            plain.search(SearchQuery(query, limit=3), NO_LIMIT)
            base_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            hybrid.search(SearchQuery(query, limit=3), NO_LIMIT)
            hyb_t.append(time.perf_counter() - t)
        results[f"{hybrid.last_path:8} {query[:40]}"] = (base_t, hyb_t)
    print(f"\n{n} memories: vector cache +{cache_mb:.0f} MB RSS (process {rss_mb():.0f} MB)")
    for label, (base_t, hyb_t) in results.items():
        b50, h50, b95, h95 = (
            statistics.median(base_t) * 1000,
            statistics.median(hyb_t) * 1000,
            pct(base_t, 0.95),
            pct(hyb_t, 0.95),
        )
        print(
            f"  {label:50} sqlite p50 {b50:6.2f} p95 {b95:6.2f} | hybrid p50 {h50:6.2f} p95 {h95:6.2f} ms"
            f" | +{h95 - b95:.2f} ms at p95 (x{h50 / b50:.1f} p50)"
        )
    hybrid.close()
    plain.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2k memories, few rounds")
    parser.add_argument("--sizes", default="", help="comma-separated corpus sizes (default 10000,100000)")
    parser.add_argument("--embed", type=int, default=2000, help="distinct texts actually embedded per corpus")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s] or ([2000] if args.quick else [10_000, 100_000])
    rounds = 10 if args.quick else 40
    distinct = min(args.embed, 300) if args.quick else args.embed
    rng = random.Random(27)
    print(f"process before the model: {rss_mb():.0f} MB RSS")
    bench_embedding(corpus(200, rng), 20 if args.quick else 100)
    with tempfile.TemporaryDirectory(prefix="paxm-hybrid-bench-") as tmp:
        for n in sizes:
            bench_size(n, distinct, rounds, Path(tmp), rng)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
