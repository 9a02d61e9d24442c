"""Benchmarks of the SQLite provider: upstream's workloads plus multi-term and long-prompt recall.

Run from the repository root::

    uv run python benchmarks/sqlite_bench.py            # full sizes (100k / 10k x 32 KiB corpora)
    uv run python benchmarks/sqlite_bench.py --quick    # smoke sizes, well under a minute

Corpora are generated at run time into a temporary directory and deleted afterwards.
Every write is compared with the same SQL statement run by the ``sqlite3`` command-line
tool (per-statement ``.timer`` times, so process start-up is excluded); every recall is
compared with the raw FTS5 query upstream issues first (quoted terms OR-ed, bm25 order,
LIMIT 50), run on the same connection.  Medians are printed with the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.analyzer import index_text
from paxm_provider_sqlite.timestamps import stamp

SQLITE3 = shutil.which("sqlite3") or "/usr/bin/sqlite3"
NO_LIMIT = Deadline.none()
KIB = 1024

_UPSERT = """INSERT INTO memories(id, text, source, metadata_json, created_at, updated_at, tier, expires_at,
 terms, extras, nterms) VALUES ({id}, {text}, '', '{{}}', {now}, {now}, 'ltm', '', {terms}, {extras}, {n})
ON CONFLICT(id) DO UPDATE SET text = excluded.text, terms = excluded.terms, extras = excluded.extras,
 nterms = excluded.nterms, source = excluded.source, metadata_json = excluded.metadata_json,
 updated_at = excluded.updated_at, tier = excluded.tier, expires_at = excluded.expires_at;"""


def payload(marker: str, size: int) -> str:
    """Upstream's generator: a marker sentence padded with ``x`` to ``size`` bytes."""
    head = f"benchmark adapter memory {marker} "
    return head + "x" * max(0, size - len(head))


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def timed(fn: Callable[[], object], repeat: int, warmup: int = 2) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def fmt_size(size: int) -> str:
    return f"{size // (1024 * KIB)} MiB" if size >= 1024 * KIB else f"{size // KIB} KiB"


def row(name: str, ours: float, base: float | None, note: str = "") -> None:
    ratio = f"{ours / base:6.2f}x" if base else "     -"
    base_text = f"{base:9.3f}" if base is not None else "        -"
    print(f"  {name:<44} {ours:9.3f} {base_text} {ratio}  {note}")


def header(title: str, base: str) -> None:
    print(f"\n{title}")
    print(f"  {'workload':<44} {'paxm ms':>9} {base:>9} {'ratio':>7}")


def sql_quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def cli_mean(db: Path, statements: list[str], groups: int) -> float:
    """Mean wall time (seconds) per group of ``statements`` run by the sqlite3 CLI.

    The CLI's own ``.timer`` has millisecond resolution, so the script is timed as a whole
    and the start-up cost (the same script without the statements, best of three) is
    subtracted.  The CLI uses the provider's pragmas (WAL, synchronous=NORMAL).
    """
    setup = "PRAGMA busy_timeout = 5000;\nPRAGMA journal_mode = WAL;\nPRAGMA synchronous = NORMAL;\n"

    def run(script: str) -> float:
        start = time.perf_counter()
        subprocess.run([SQLITE3, str(db)], input=script, capture_output=True, text=True, check=True)
        return time.perf_counter() - start

    empty = min(run(setup) for _ in range(3))
    full = run(setup + "\n".join(statements) + "\n")
    return max(0.0, full - empty) / groups


def fresh(tmp: Path, name: str) -> SQLiteProvider:
    prov = SQLiteProvider(name, ProviderConfig(path=str(tmp / f"{name}.sqlite")))
    prov.health(NO_LIMIT)
    return prov


def bench_writes(tmp: Path, quick: bool) -> None:
    header("Writes (one transaction each)", "sqlite3")
    sizes = [1 * KIB, 8 * KIB, 32 * KIB, 128 * KIB, 512 * KIB, 1024 * KIB, 2048 * KIB]
    for size in sizes:
        repeat = 5 if quick else (30 if size <= 128 * KIB else 10)
        prov = fresh(tmp, f"w{size}")
        counter = iter(range(10**9))

        def write(prov: SQLiteProvider = prov, size: int = size, counter: Iterator[int] = counter) -> None:
            n = next(counter)
            prov.put(MemoryItem(text=payload(f"benchmarker{n:06d}", size), id=f"w{n}"), NO_LIMIT)

        ours = median_ms(timed(write, repeat))
        prov.close()
        # Same statement (including the analysed columns paxm computes) through the CLI.
        base_db = tmp / f"cli{size}.sqlite"
        shutil.copy(tmp / f"w{size}.sqlite", base_db)
        stmts = []
        for n in range(repeat):
            text = payload(f"cliwrite{n:06d}", size)
            idx = index_text(text)
            stmts.append(
                _UPSERT.format(
                    id=sql_quote(f"c{n}"),
                    text=sql_quote(text),
                    now=sql_quote(stamp(__import__("datetime").datetime.now())),
                    terms=sql_quote(idx.terms),
                    extras=sql_quote(idx.extras),
                    n=idx.unique,
                )
            )
        base = cli_mean(base_db, stmts, repeat) * 1000.0
        mbps = size / (ours / 1000) / 1e6
        row(f"single write {fmt_size(size)}", ours, base, f"{mbps:7.2f} MB/s")
    for count, size in ((10, 8 * KIB), (10, 32 * KIB), (10, 128 * KIB), (20, 32 * KIB)):
        prov = fresh(tmp, f"b{count}x{size}")
        counter = iter(range(10**9))

        def batch(
            prov: SQLiteProvider = prov, count: int = count, size: int = size, counter: Iterator[int] = counter
        ) -> None:
            n = next(counter)
            items = [MemoryItem(text=payload(f"batch{n:04d}x{i:03d}", size), id=f"b{n}-{i}") for i in range(count)]
            prov.put_batch(items, NO_LIMIT)

        ours = median_ms(timed(batch, 3 if quick else 10))
        prov.close()
        base_db = tmp / f"clib{count}x{size}.sqlite"
        shutil.copy(tmp / f"b{count}x{size}.sqlite", base_db)
        groups = []
        reps = 3 if quick else 10
        for n in range(reps):
            stmts = ["BEGIN IMMEDIATE;"]
            for i in range(count):
                text = payload(f"clibatch{n:04d}x{i:03d}", size)
                idx = index_text(text)
                stmts.append(
                    _UPSERT.format(
                        id=sql_quote(f"c{n}-{i}"),
                        text=sql_quote(text),
                        now="'2026-01-01T00:00:00.000000Z'",
                        terms=sql_quote(idx.terms),
                        extras=sql_quote(idx.extras),
                        n=idx.unique,
                    )
                )
            stmts.append("COMMIT;")
            groups.append(stmts)
        base = cli_mean(base_db, [s for g in groups for s in g], reps) * 1000.0
        row(f"batch {count} x {fmt_size(size)}", ours, base, f"{count * size / (ours / 1000) / 1e6:7.2f} MB/s")


def build_corpus(prov: SQLiteProvider, count: int, make: Callable[[int], str]) -> float:
    start = time.perf_counter()
    chunk = 2000
    for base in range(0, count, chunk):
        items = [MemoryItem(text=make(i), id=f"m{i:07d}") for i in range(base, min(count, base + chunk))]
        prov.put_batch(items, NO_LIMIT)
    return time.perf_counter() - start


def raw_fts(conn: sqlite3.Connection, text: str) -> Callable[[], object]:
    """Upstream's first query: quoted canonical terms OR-ed over memory_fts, bm25 order, LIMIT 50."""
    terms = list(dict.fromkeys(w.lower() for w in re.findall(r"[^\W_]+", text)))
    expr = " OR ".join('"' + t + '"' for t in terms)
    sql = """SELECT m.id, m.text, m.source, m.metadata_json, m.created_at, m.tier, m.expires_at, bm25(memory_fts)
             FROM memory_fts JOIN memories AS m ON m.rowid = memory_fts.rowid
             WHERE memory_fts MATCH ? AND (m.expires_at = '' OR m.expires_at > ?)
             ORDER BY bm25(memory_fts), m.created_at DESC LIMIT 50"""
    now = stamp(__import__("datetime").datetime.now())
    return lambda: conn.execute(sql, (expr, now)).fetchall()


RESULTS: dict[str, float] = {}


def recall_rows(prov: SQLiteProvider, label: str, queries: dict[str, str], repeat: int, expect: dict[str, int]) -> None:
    raw_conn = sqlite3.connect(prov.path)
    for name, text in queries.items():
        query = SearchQuery(text, limit=5)

        def ours_fn(query: SearchQuery = query) -> object:
            return prov.search(query, NO_LIMIT)

        hits = prov.search(query, NO_LIMIT)
        trace = prov.last_trace
        ours = median_ms(timed(ours_fn, repeat))
        base = median_ms(timed(raw_fts(raw_conn, text), repeat)) if len(text) < 200 else None
        if base is None:
            base = median_ms(timed(raw_fts(raw_conn, text), max(3, repeat // 10), warmup=1))
        want = expect.get(name)
        status = f"hits={len(hits)} stage={trace.selected if trace else '?'}"
        if want is not None and len(hits) < want:
            status += f" (EXPECTED >= {want})"
        row(f"{label} {name}", ours, base, status)
        RESULTS[f"{label} {name}"] = ours
    raw_conn.close()


_COMMON = (
    "the a to of and in is for on with that this it be as at by from or an are was not we can you have use if "
    "when should will but all one more new after before into out up about then so also need run make only"
).split()


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    syllables = ["ka", "lo", "mi", "ter", "on", "sa", "vel", "dra", "qu", "is", "po", "ne", "ru", "xen", "tor", "al"]
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def realistic(seed: int, vocab: list[str], cum_weights: list[float], nbytes: int) -> str:
    """Prose-like text: common function words mixed with a Zipf-distributed content vocabulary."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    total = cum_weights[-1]
    while size < nbytes:
        if rng.random() < 0.45:
            word = rng.choice(_COMMON)
        else:
            word = vocab[min(len(vocab) - 1, bisect.bisect(cum_weights, rng.random() * total))]
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:nbytes]


def bench_recall(tmp: Path, quick: bool) -> None:
    short_n = 10_000 if quick else 100_000
    long_n = 1_000 if quick else 10_000
    repeat = 50 if quick else 200
    header(f"Recall, short corpus ({short_n} x 256 B, limit 5)", "raw FTS")
    prov = fresh(tmp, "short")
    built = build_corpus(prov, short_n, lambda i: payload(f"benchmarker{i:06d}", 256))
    print(f"  (built in {built:.1f} s)")
    mid = short_n // 2
    recall_rows(
        prov,
        f"{short_n // 1000}k",
        {
            "hit": f"benchmarker{mid:06d}",
            "miss": "absentmarkerbenchmark",
            "analyzer-fallback miss": "absent analyzer terms",
            "multi-term hit": f"adapter memory benchmarker{mid:06d}",
            "multi-term relaxed": f"benchmarker{mid:06d} absent words here",
        },
        repeat,
        {"hit": 1, "multi-term hit": 1, "multi-term relaxed": 1},
    )
    prov.close()

    header(f"Recall, long corpus ({long_n} x 32 KiB, limit 5)", "raw FTS")
    prov = fresh(tmp, "long")
    built = build_corpus(prov, long_n, lambda i: payload(f"benchmarker{i:06d}", 32 * KIB))
    print(f"  (built in {built:.1f} s)")
    mid = long_n // 2
    recall_rows(
        prov,
        f"{long_n // 1000}k x 32 KiB",
        {"hit": f"benchmarker{mid:06d}", "miss": "absentmarkerbenchmark"},
        repeat,
        {"hit": 1},
    )
    prov.close()

    header(f"Recall, prose corpus ({short_n} x 256 B realistic text, limit 5)", "raw FTS")
    rng = random.Random(7)
    vocab = _vocabulary(rng, 20_000)
    weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocab))))
    prov = fresh(tmp, "prose")
    target = short_n // 3

    def prose(i: int) -> str:
        text = realistic(i, vocab, weights, 256)
        return f"{text} rollout{i:06d}" if i == target else text

    built = build_corpus(prov, short_n, prose)
    print(f"  (built in {built:.1f} s)")
    prompt = realistic(10**6, vocab, weights, 2400)
    words = prompt.split()[:299] + [f"rollout{target:06d}"]
    prompt300 = " ".join(words)
    recall_rows(
        prov,
        "prose",
        {
            "3-term query": " ".join(vocab[i] for i in (40, 900, 5000)),
            "300-word prompt": prompt300,
        },
        max(20, repeat // 4),
        {"300-word prompt": 1},
    )
    prov.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small corpora and few repetitions (smoke run)")
    parser.add_argument("--only", choices=("writes", "recall"), help="run one group")
    args = parser.parse_args(argv)
    print(f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}, sqlite3 CLI {SQLITE3}")
    with tempfile.TemporaryDirectory(prefix="paxm-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if args.only in (None, "writes"):
            bench_writes(tmp, args.quick)
        if args.only in (None, "recall"):
            bench_recall(tmp, args.quick)
    if RESULTS and not args.quick:
        print("\nTargets (issue #4)")
        for key, limit in (("100k hit", 0.5), ("10k x 32 KiB hit", 1.0), ("prose 300-word prompt", 50.0)):
            value = RESULTS.get(key)
            if value is not None:
                verdict = "ok" if value <= limit else "MISSED"
                print(f"  {key:<44} {value:9.3f} ms  target <= {limit} ms  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
