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
the model and the vector cache are loaded, and, for the daemon's real cost, the VmRSS (and
peak VmHWM) of a fresh process that opens the store and answers the queries with ``sqlite``
versus ``sqlite-hybrid`` (``RssAnon``: the private part, without shared library pages).
Hybrid latencies are cold (the provider's query-embedding cache is cleared before every call)
unless labelled ``cached``.  The vector search is timed alone too: the sign-bit pre-filter
with the 4-bit estimate, and the exact re-scoring of 64 candidates from their stored float32
vectors.  CPU columns are the whole process's CPU time (the warm-up thread has finished before
any timed call).  ``--workdir`` keeps the generated stores and reuses them on the next run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
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
        vec = base[i % len(base)] + np.asarray(noise.normal(0, 0.02, base.shape[1]), dtype=np.float32)
        out.append((int(rowid), (vec / np.linalg.norm(vec)).astype(np.float32).tobytes()))
    with conn:
        store_vectors(conn, MODEL_ID, out)
    conn.close()


def probe_rss(kind: str, db: str) -> int:
    """Child mode: open ``db`` as ``kind``, answer the queries, print VmRSS/VmHWM in MB."""
    if kind == "sqlite-hybrid":
        from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider

        prov: SQLiteProvider = HybridSQLiteProvider("probe", ProviderConfig(path=db))
    else:
        prov = SQLiteProvider("probe", ProviderConfig(path=db))
    for query in QUERIES:
        prov.search(SearchQuery(query, limit=3), Deadline.after(120))
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    print(json.dumps({k: int(status[k].split()[0]) / 1024.0 for k in ("VmRSS", "VmHWM", "RssAnon")}))
    prov.close()
    return 0


def child_rss(kind: str, db: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--rss-probe", kind, str(db)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def build_store(db: Path, n: int, distinct: int, rng: random.Random) -> list[str]:
    texts = corpus(n, rng)
    if db.exists():
        return texts
    tmp = db.with_name(db.name + ".partial")
    for leftover in db.parent.glob(tmp.name + "*"):
        leftover.unlink()
    plain = SQLiteProvider("plain", ProviderConfig(path=str(tmp)))
    for start in range(0, n, 1000):
        plain.put_batch([MemoryItem(text=t, tier="ltm") for t in texts[start : start + 1000]], NO_LIMIT)
    plain.close()
    fill_vectors(tmp, min(distinct, n), rng)
    tmp.rename(db)
    return texts


#: CPU seconds of the process per timed call, every thread counted: what a call costs on a free
#: core, whatever else loads the machine (wall times on a shared machine are mostly waiting).
CPU: list[float] = []


def timed(fn: object, *args: object) -> float:
    c = time.process_time()
    t = time.perf_counter()
    fn(*args)  # type: ignore[operator]
    wall = time.perf_counter() - t
    CPU.append(time.process_time() - c)
    return wall


def bench_size(n: int, distinct: int, rounds: int, root: Path, rng: random.Random) -> None:
    from paxm_provider_sqlite_hybrid.embedder import MODEL_ID
    from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider
    from paxm_provider_sqlite_hybrid.vectors import exact_cosines

    db = root / f"hybrid-{n}.sqlite"
    texts = build_store(db, n, distinct, rng)
    plain = SQLiteProvider("plain", ProviderConfig(path=str(db)))
    before = rss_mb()
    started = time.perf_counter()
    hybrid = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(db)))
    hybrid.search(SearchQuery(QUERIES[0], limit=3), Deadline.after(60))  # loads the vector cache
    load_ms = (time.perf_counter() - started) * 1000
    cache_mb = rss_mb() - before
    results: dict[str, tuple[list[float], list[float], list[float], list[float]]] = {}
    for query in [*QUERIES, texts[7]]:
        base_t, hyb_t, cached_t, base_c, hyb_c, cached_c = [], [], [], [], [], []
        for _ in range(rounds):
            base_t.append(timed(plain.search, SearchQuery(query, limit=3), NO_LIMIT))
            base_c.append(CPU[-1])
            hybrid._query_vectors.clear()  # cold: the query is embedded every time
            hyb_t.append(timed(hybrid.search, SearchQuery(query, limit=3), NO_LIMIT))
            hyb_c.append(CPU[-1])
            cached_t.append(timed(hybrid.search, SearchQuery(query, limit=3), NO_LIMIT))
            cached_c.append(CPU[-1])
        results[f"{hybrid.last_path:8} {query[:40]}"] = (base_t, hyb_t, base_c, hyb_c)
        if hybrid.last_path.startswith("fused:"):  # the query was embedded (not answered lexically alone)
            results[f"{'cached':8} {query[:40]}"] = (base_t, cached_t, base_c, cached_c)
    scan, scan_c, exact, exact_c = [], [], [], []
    probe = hybrid._query_vector(QUERIES[0], NO_LIMIT)
    rescored = [rowid for rowid, _ in hybrid._cache.top(probe, 0.28, 256)][:64]
    with hybrid._db.session("bench", NO_LIMIT) as conn:
        for _ in range(rounds):  # interleaved: both parts see the same machine load
            scan.append(timed(hybrid._cache.top, probe, 0.28, 256))
            scan_c.append(CPU[-1])
            exact.append(timed(exact_cosines, conn, MODEL_ID, probe, rescored))
            exact_c.append(CPU[-1])
    mode = "sign-bit pre-filter + 4-bit estimate" if hybrid._cache.prefiltered else "4-bit estimate of every row"
    plain_rss, hybrid_rss = child_rss("sqlite", db), child_rss("sqlite-hybrid", db)
    print(
        f"\n{n} memories: vector cache +{cache_mb:.0f} MB RSS ({hybrid._cache.nbytes() / 2**20:.0f} MB of arrays),"
        f" first load {load_ms:.0f} ms"
    )
    print(
        f"  vector search ({mode}): CPU median {statistics.median(scan_c) * 1000:.2f} ms,"
        f" p95 {pct(scan_c, 0.95):.2f} ms (wall median {statistics.median(scan) * 1000:.2f});"
        f" exact re-scoring of {len(rescored)} from SQLite: CPU median {statistics.median(exact_c) * 1000:.2f} ms,"
        f" p95 {pct(exact_c, 0.95):.2f} ms (wall median {statistics.median(exact) * 1000:.2f})"
    )
    print(
        f"  fresh process: sqlite {plain_rss['VmRSS']:.0f} MB (peak {plain_rss['VmHWM']:.0f}),"
        f" sqlite-hybrid {hybrid_rss['VmRSS']:.0f} MB (peak {hybrid_rss['VmHWM']:.0f}):"
        f" +{hybrid_rss['VmRSS'] - plain_rss['VmRSS']:.0f} MB resident,"
        f" +{hybrid_rss['RssAnon'] - plain_rss['RssAnon']:.0f} MB of it private (RssAnon: not shared library pages)"
    )
    for label, (base_t, hyb_t, base_c, hyb_c) in results.items():
        b50, h50, b95, h95 = (
            statistics.median(base_t) * 1000,
            statistics.median(hyb_t) * 1000,
            pct(base_t, 0.95),
            pct(hyb_t, 0.95),
        )
        cpu95 = pct(hyb_c, 0.95) - pct(base_c, 0.95)
        cpu50 = (statistics.median(hyb_c) - statistics.median(base_c)) * 1000
        print(
            f"  {label:50} sqlite p50 {b50:6.2f} p95 {b95:6.2f} | hybrid p50 {h50:6.2f} p95 {h95:6.2f} ms"
            f" | +{h95 - b95:.2f} ms at p95 (x{h50 / b50:.1f} p50) | CPU +{cpu95:.2f} ms at p95, +{cpu50:.2f} p50"
        )
    hybrid.close()
    plain.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2k memories, few rounds")
    parser.add_argument("--sizes", default="", help="comma-separated corpus sizes (default 10000,100000)")
    parser.add_argument("--embed", type=int, default=2000, help="distinct texts actually embedded per corpus")
    parser.add_argument("--workdir", default="", help="keep the generated stores here and reuse them")
    parser.add_argument("--rss-probe", nargs=2, metavar=("TYPE", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_probe:
        return probe_rss(*args.rss_probe)
    sizes = [int(s) for s in args.sizes.split(",") if s] or ([2000] if args.quick else [10_000, 100_000])
    rounds = 10 if args.quick else 40
    distinct = min(args.embed, 300) if args.quick else args.embed
    rng = random.Random(27)
    print(f"process before the model: {rss_mb():.0f} MB RSS")
    bench_embedding(corpus(200, rng), 20 if args.quick else 100)
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        for n in sizes:
            bench_size(n, distinct, rounds, Path(args.workdir), random.Random(n))
        return 0
    with tempfile.TemporaryDirectory(prefix="paxm-hybrid-bench-") as tmp:
        for n in sizes:
            bench_size(n, distinct, rounds, Path(tmp), random.Random(n))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
