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
import os
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

from paxm_core import Deadline, MemoryItem, MemoryOrigin, MemoryScope, ProviderConfig, SearchQuery, TurnContext
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.analyzer import index_text
from paxm_provider_sqlite.timestamps import stamp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import record  # noqa: E402
from timing import median_ms, timed  # noqa: E402

SQLITE3 = shutil.which("sqlite3") or "/usr/bin/sqlite3"
NO_LIMIT = Deadline.none()
KIB = 1024

_UPSERT = """INSERT INTO memories(id, text, source, metadata_json, created_at, updated_at, tier, expires_at,
 terms, extras, nterms) VALUES ({id}, {text}, '', '{{}}', {now}, {now}, 'ltm', '', {terms}, {extras}, {n})
ON CONFLICT(id) DO UPDATE SET text = excluded.text, terms = excluded.terms, extras = excluded.extras,
 nterms = excluded.nterms, source = excluded.source, metadata_json = excluded.metadata_json,
 updated_at = excluded.updated_at, tier = excluded.tier, expires_at = excluded.expires_at;"""


def upsert(key: str, text: str, now: str) -> str:
    """The SQL paxm's write runs for one memory, with the analysed columns paxm computes."""
    idx = index_text(text)
    terms, extras = sql_quote(idx.terms), sql_quote(idx.extras)
    return _UPSERT.format(
        id=sql_quote(key), text=sql_quote(text), now=sql_quote(now), terms=terms, extras=extras, n=idx.unique
    )


def payload(marker: str, size: int) -> str:
    """Upstream's generator: a marker sentence padded with ``x`` to ``size`` bytes."""
    head = f"benchmark adapter memory {marker} "
    return head + "x" * max(0, size - len(head))


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

        ours = median_ms(timed(write, repeat, warmup=2))
        prov.close()
        # Same statement (including the analysed columns paxm computes) through the CLI.
        base_db = tmp / f"cli{size}.sqlite"
        shutil.copy(tmp / f"w{size}.sqlite", base_db)
        stmts = []
        for n in range(repeat):
            stmts.append(
                upsert(f"c{n}", payload(f"cliwrite{n:06d}", size), stamp(__import__("datetime").datetime.now()))
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

        ours = median_ms(timed(batch, 3 if quick else 10, warmup=2))
        prov.close()
        base_db = tmp / f"clib{count}x{size}.sqlite"
        shutil.copy(tmp / f"b{count}x{size}.sqlite", base_db)
        groups = []
        reps = 3 if quick else 10
        for n in range(reps):
            stmts = ["BEGIN IMMEDIATE;"]
            for i in range(count):
                stmts.append(
                    upsert(f"c{n}-{i}", payload(f"clibatch{n:04d}x{i:03d}", size), "2026-01-01T00:00:00.000000Z")
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
    """Upstream's first query: quoted lowercased terms OR-ed, bm25 order, LIMIT 50.

    Upstream runs it over ``memory_fts`` (its index of the raw text).  paxm no longer keeps that
    index (migration ``m006``), so on a paxm file the same statement runs over ``memory_terms``,
    the one FTS5 index there is: the same FTS5 work for the same terms.
    """
    terms = list(dict.fromkeys(w.lower() for w in re.findall(r"[^\W_]+", text)))
    expr = " OR ".join('"' + t + '"' for t in terms)
    has_raw = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_fts'").fetchone() is not None
    fts = "memory_fts" if has_raw else "memory_terms"
    sql = f"""SELECT m.id, m.text, m.source, m.metadata_json, m.created_at, m.tier, m.expires_at, bm25({fts})
             FROM {fts} JOIN memories AS m ON m.rowid = {fts}.rowid
             WHERE {fts} MATCH ? AND (m.expires_at = '' OR m.expires_at > ?)
             ORDER BY bm25({fts}), m.created_at DESC LIMIT 50"""
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
        ours = median_ms(timed(ours_fn, repeat, warmup=2))
        base = median_ms(timed(raw_fts(raw_conn, text), repeat, warmup=2)) if len(text) < 200 else None
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
    words: set[str] = set()
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


_PROSE: tuple[list[str], list[float]] | None = None


def prose_text(seed: int, nbytes: int) -> str:
    """``nbytes`` of prose-like text (the shared 20k-word Zipf vocabulary, built once)."""
    global _PROSE
    if _PROSE is None:
        vocab = _vocabulary(random.Random(7), 20_000)
        _PROSE = (vocab, list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocab)))))
    return realistic(seed, _PROSE[0], _PROSE[1], nbytes)


def episode_item(n: int, nbytes: int) -> MemoryItem:
    """A memory shaped like a delivered capture episode: prose text, turn boundaries, attribution."""
    at = __import__("datetime").datetime(2026, 1, 1, tzinfo=__import__("datetime").UTC)
    return MemoryItem(
        text=prose_text(n, nbytes) + f" ticket{n:07d}",
        id=f"ep{n:08d}",
        source="hook:episode",
        metadata={"paxm_episode_id": f"ep{n:08d}", "paxm_episode_events": "2", "agent": "claude-code"},
        created_at=at,
        origin=MemoryOrigin(user_id="bench", agent_id="claude-code", session_id=f"s{n // 50}", turn_id=f"t{n}"),
        scope=MemoryScope(type="personal", id="bench"),
        turn=TurnContext(session_id=f"s{n // 50}", turn_id=f"t{n}", started_at=at, ended_at=at),
    )


_RAW_INSERT = """INSERT INTO memories(id, text, source, metadata_json, created_at, updated_at, tier, expires_at,
 terms, extras, nterms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""


def bench_batch_writes(tmp: Path, quick: bool) -> None:
    """``put_batch`` of 256 episode-shaped items vs a raw ``executemany`` of the same final rows.

    The baseline is the floor any provider on this schema pays: the rows already analysed and
    encoded (``index_text``, metadata JSON, stamps computed outside the timing), inserted in one
    transaction into an identical file with the same triggers.  Runs alternate (ours, raw, ours,
    raw, ...) so machine load hits both alike; CPU time is reported next to wall time.
    """
    batch = 256
    batches = 6 if quick else 30
    header(f"Batched writes ({batch} items per put_batch, {batches} batches)", "raw ms")
    for label, nbytes in (("256 B", 256), ("700-char turn", 700)):
        prov = fresh(tmp, f"pb{nbytes}")
        raw_path = tmp / f"rawpb{nbytes}.sqlite"
        with sqlite3.connect(prov.path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the schema is in the WAL until then
        shutil.copy(prov.path, raw_path)  # the same empty schema, triggers included
        raw = sqlite3.connect(raw_path, isolation_level=None)
        raw.execute("PRAGMA journal_mode = WAL")
        raw.execute("PRAGMA synchronous = NORMAL")
        ours_wall: list[float] = []
        ours_cpu: list[float] = []
        raw_wall: list[float] = []
        raw_cpu: list[float] = []
        for b in range(batches):
            items = [episode_item(b * batch + i, nbytes) for i in range(batch)]
            cpu0, t0 = time.process_time(), time.perf_counter()
            prov.put_batch(items, NO_LIMIT)
            ours_wall.append(time.perf_counter() - t0)
            ours_cpu.append(time.process_time() - cpu0)
            rows = []
            for it in items:
                idx = index_text(it.text)
                rows.append(
                    (
                        "r" + it.id,
                        it.text,
                        it.source,
                        "{}",
                        "2026",
                        "2026",
                        "ltm",
                        "",
                        idx.terms,
                        idx.extras,
                        idx.unique,
                    )
                )
            cpu0, t0 = time.process_time(), time.perf_counter()
            raw.execute("BEGIN IMMEDIATE")
            raw.executemany(_RAW_INSERT, rows)
            raw.execute("COMMIT")
            raw_wall.append(time.perf_counter() - t0)
            raw_cpu.append(time.process_time() - cpu0)
        raw.close()
        prov.close()
        ours = statistics.median(ours_wall)
        base = statistics.median(raw_wall)
        rate = batch / ours
        cpu_rate = batch / statistics.median(ours_cpu)
        raw_cpu_rate = batch / statistics.median(raw_cpu)
        row(
            f"put_batch {batch} x {label}",
            ours * 1000,
            base * 1000,
            f"{rate:6.0f} items/s wall; CPU {cpu_rate:.0f}/s vs raw {raw_cpu_rate:.0f}/s",
        )
        target = 10_000 if nbytes == 256 else 4_000
        record(
            f"SQLite put_batch {batch} x {label}",
            rate,
            "items/s",
            f"raw executemany {batch / base:.0f} rows/s ({ours / base:.2f}x its time); CPU {cpu_rate:.0f}/s",
            f">= {target:,} items/s",
            rate >= target,
        )


def db_breakdown(path: Path) -> tuple[int, dict[str, int]]:
    """Bytes on disk after a WAL checkpoint, and bytes per table/index (``dbstat``), largest first."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        parts = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall())
    size = sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())
    return size, parts


def bench_disk(tmp: Path, count: int) -> None:
    """Bytes per memory for ``count`` x 256 B, prose and upstream's padded payload, by table."""
    print(f"\nOn-disk size ({count} x 256 B, after wal_checkpoint(TRUNCATE))")
    for label, make in (
        ("prose", lambda i: prose_text(i, 256)),
        ("upstream payload", lambda i: payload(f"benchmarker{i:07d}", 256)),
    ):
        prov = fresh(tmp, f"disk-{label[0]}")
        build_corpus(prov, count, make)
        prov.close()
        size, parts = db_breakdown(prov.path)
        per = size / count
        print(f"  {label:<18} {per:8.1f} B/memory = {per / 256:4.2f}x the 256 B text")
        for name, nbytes in parts.items():
            if nbytes / count >= 1.0:
                print(f"    {name:<28} {nbytes / count:8.1f} B/memory")
        record(
            f"on-disk size per memory, {count // 1000}k x 256 B {label} (sqlite_bench)",
            per,
            "B",
            f"raw text 256 B ({per / 256:.2f}x)",
            "<= 3x the raw text",
            per / 256 <= 3.0,
        )
        os.unlink(prov.path)


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
    parser.add_argument("--only", choices=("writes", "batch", "disk", "recall"), help="run one group")
    parser.add_argument("--disk-memories", type=int, default=0, help="corpus size of the disk rows")
    args = parser.parse_args(argv)
    print(f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}, sqlite3 CLI {SQLITE3}")
    with tempfile.TemporaryDirectory(prefix="paxm-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if args.only in (None, "writes"):
            bench_writes(tmp, args.quick)
        if args.only in (None, "writes", "batch"):
            bench_batch_writes(tmp, args.quick)
        if args.only in (None, "disk"):
            bench_disk(tmp, args.disk_memories or (10_000 if args.quick else 200_000))
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
