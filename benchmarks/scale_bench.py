"""The SQLite provider at a year of memory: 1M x 256 B recall, a 300-word prompt, bytes on disk.

    uv run python benchmarks/scale_bench.py                  # 1M memories per corpus (minutes)
    uv run python benchmarks/scale_bench.py --memories 20000 # smoke size
    uv run python benchmarks/scale_bench.py --dir /tmp/c1m   # keep the corpora there, reuse them

Two corpora are generated at run time (into a temporary directory unless ``--dir`` names one;
never committed):

* short: ``--memories`` x 256 B of upstream's payload (``benchmark adapter memory
  benchmarker<n>`` padded with ``x``); a recall hit on the middle marker, and the database's
  size on disk (main file + WAL after a checkpoint) per memory, against the 256 bytes of raw
  text;
* prose: ``--memories`` x 256 B of prose-like text (function words + a Zipf vocabulary), and a
  300-word prompt naming one memory's unique marker.

The baseline is the raw FTS5 query over the index recall actually reads, ``memory_terms``: the
query's analysed terms (the same FTS5 expressions the plan uses) OR-ed, bm25 order, joined to
``memories`` with the expiry filter, LIMIT 50, on the same file and connection settings.  (Not
``memory_fts``, upstream's index of the raw text, which recall never queries.)

Each figure is measured twice, the provider and the baseline interleaved (A B A B ...), with
wall and CPU time: *repeated* (the same query again and again, as the issue's 100k figures
were), and *after a write* (a scratch memory stored and deleted before every timed recall, so
nothing cached between recalls survives: what a recall right after a captured turn costs).

Targets (issue #23): hit <= 0.5 ms and <= 3x raw FTS5; prompt <= 30 ms; size <= 3x the raw text.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import record  # noqa: E402
from sqlite_bench import (  # noqa: E402
    NO_LIMIT,
    _vocabulary,
    build_corpus,
    fresh,
    payload,
    realistic,
)

from paxm_core import MemoryItem, SearchQuery  # noqa: E402
from paxm_provider_sqlite.provider import SQLiteProvider  # noqa: E402
from paxm_provider_sqlite.retrieval.analyzer import analyze_query  # noqa: E402
from paxm_provider_sqlite.timestamps import stamp  # noqa: E402


def on_disk(path: Path) -> int:
    """Bytes of the database file plus its WAL and shared-memory files, after a checkpoint."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def raw_terms(conn: sqlite3.Connection, text: str) -> Callable[[], object]:
    """The raw FTS5 query over ``memory_terms``: the query's terms OR-ed, bm25 order, LIMIT 50."""
    expr = " OR ".join(g.fts() for g in analyze_query(text).groups)
    sql = """SELECT m.id, m.text, m.source, m.metadata_json, m.created_at, m.tier, m.expires_at, bm25(memory_terms)
             FROM memory_terms JOIN memories AS m ON m.rowid = memory_terms.rowid
             WHERE memory_terms MATCH ? AND (m.expires_at = '' OR m.expires_at > ?)
             ORDER BY bm25(memory_terms), m.created_at DESC LIMIT 50"""
    now = stamp(dt.datetime.now(dt.UTC))
    return lambda: conn.execute(sql, (expr, now)).fetchall()


class Samples:
    """Wall and CPU seconds of repeated calls."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def time(self, fn: Callable[[], object]) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        self.cpu.append(time.process_time() - cpu)
        self.wall.append(time.perf_counter() - wall)

    @property
    def ms(self) -> float:
        return statistics.median(self.wall) * 1000.0

    @property
    def cpu_ms(self) -> float:
        return statistics.median(self.cpu) * 1000.0


def interleaved(
    ours: Callable[[], object],
    raw: Callable[[], object],
    repeat: int,
    raw_every: int = 1,
    before: Callable[[], object] | None = None,
) -> tuple[Samples, Samples]:
    """Time ``ours`` and ``raw`` alternately (raw on every ``raw_every``-th round), ``before`` untimed."""
    mine, base = Samples(), Samples()
    for fn in (ours, raw):
        fn()
    for i in range(repeat):
        if before is not None:
            before()
        mine.time(ours)
        if i % raw_every == 0:
            if before is not None:
                before()
            base.time(raw)
    return mine, base


def scratch_write(prov: SQLiteProvider) -> Callable[[], object]:
    """Store and delete a scratch memory: a real write that leaves the corpus as it was."""
    counter = itertools.count()

    def write() -> None:
        ref = prov.put(MemoryItem(text=f"scratch note {next(counter)}", id="scratch"), NO_LIMIT)
        prov.delete(ref, NO_LIMIT)

    return write


def corpus(directory: Path, name: str, count: int, make: Callable[[int], str]) -> tuple[SQLiteProvider, float | None]:
    """The provider over ``name``'s corpus, built unless ``directory`` already holds a complete one."""
    done = directory / f"{name}.count"
    path = directory / f"{name}.sqlite"
    if done.exists() and done.read_text() == str(count) and path.exists():
        return fresh(directory, name), None
    for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), done):
        stale.unlink(missing_ok=True)
    prov = fresh(directory, name)
    built = build_corpus(prov, count, make)
    done.write_text(str(count))
    return prov, built


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def short_corpus(tmp: Path, count: int, repeat: int) -> None:
    prov, built = corpus(tmp, "short", count, lambda i: payload(f"benchmarker{i:07d}", 256))
    if built is not None:
        print(f"short corpus: {count} x 256 B built in {built:.1f} s ({count / built:.0f} memories/s)")
    else:
        print(f"short corpus: {count} x 256 B reused from {tmp}")
    text = f"benchmarker{count // 2:07d}"
    query = SearchQuery(text, limit=5)
    hits = prov.search(query, NO_LIMIT)
    assert hits and text in hits[0].text, "the hit must be found"
    raw_conn = sqlite3.connect(prov.path)
    raw = raw_terms(raw_conn, text)
    print(f"  ({load()})")
    for label, before in (("repeated", None), ("after a write", scratch_write(prov))):
        mine, base = interleaved(lambda: prov.search(query, NO_LIMIT), raw, repeat, before=before)
        ratio = mine.ms / base.ms
        ok = mine.ms <= 0.5 and ratio <= 3.0
        print(
            f"  recall hit, {label:<13} {mine.ms:7.3f} ms (cpu {mine.cpu_ms:.3f})  raw FTS5 {base.ms:6.3f} ms"
            f" (cpu {base.cpu_ms:.3f})  = {ratio:4.2f}x  (target <= 0.5 ms, <= 3x)"
        )
        suffix = "" if before is None else " after a write"
        record(
            f"SQLite recall hit{suffix}, {count // 1000}k x 256 B",
            mine.ms,
            "ms",
            f"raw FTS5 over memory_terms {base.ms:.3f} ms ({ratio:.2f}x); cpu {mine.cpu_ms:.3f} vs {base.cpu_ms:.3f}",
            "<= 0.5 ms, <= 3x raw FTS5",
            ok,
        )
    raw_conn.close()
    prov.close()
    size = on_disk(Path(prov.path))
    per = size / count
    print(f"  on disk                  {per:8.1f} B/memory vs 256 B raw text = {per / 256:4.2f}x  (target <= 3x)")
    record(
        f"on-disk size per memory, {count // 1000}k x 256 B",
        per,
        "B",
        f"raw text 256 B ({per / 256:.2f}x)",
        "<= 3x the raw text",
        per / 256 <= 3.0,
    )


def prose_corpus(tmp: Path, count: int, repeat: int) -> None:
    rng = random.Random(7)
    vocab = _vocabulary(rng, 20_000)
    weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocab))))
    target = count // 3

    def prose(i: int) -> str:
        text = realistic(i, vocab, weights, 256)
        return f"{text} rollout{target:07d}" if i == target else text

    prov, built = corpus(tmp, "prose", count, prose)
    if built is not None:
        print(f"prose corpus: {count} x 256 B built in {built:.1f} s")
    else:
        print(f"prose corpus: {count} x 256 B reused from {tmp}")
    words = realistic(10**6, vocab, weights, 2400).split()[:299] + [f"rollout{target:07d}"]
    query = SearchQuery(" ".join(words), limit=5)
    hits = prov.search(query, NO_LIMIT)
    assert any(f"rollout{target:07d}" in h.text for h in hits), "the prompt's memory must be recalled"
    raw_conn = sqlite3.connect(prov.path)
    raw = raw_terms(raw_conn, query.text)
    # The raw OR of ~150 terms ranks every row holding any of them (seconds at 1M): a few runs.
    raw_every = max(1, repeat // 3)
    print(f"  ({load()})")
    for label, before in (("repeated", None), ("after a write", scratch_write(prov))):
        mine, base = interleaved(lambda: prov.search(query, NO_LIMIT), raw, repeat, raw_every, before)
        print(
            f"  300-word prompt, {label:<13} {mine.ms:8.3f} ms (cpu {mine.cpu_ms:.3f})"
            f"  raw FTS5 OR-query {base.ms:9.3f} ms  (target <= 30 ms)"
        )
        suffix = "" if before is None else " after a write"
        record(
            f"300-word prompt{suffix}, {count // 1000}k memories",
            mine.ms,
            "ms",
            f"raw FTS5 OR of all terms over memory_terms {base.ms:.1f} ms; cpu {mine.cpu_ms:.1f} ms",
            "<= 30 ms",
            mine.ms <= 30.0,
        )
    raw_conn.close()
    prov.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=1_000_000, help="memories per corpus")
    parser.add_argument("--repeat", type=int, default=200, help="timed recalls per row")
    parser.add_argument("--only", choices=("short", "prose"))
    parser.add_argument("--dir", type=Path, help="keep the corpora in this directory and reuse them")
    args = parser.parse_args(argv)
    print(f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="paxm-scale-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if args.dir is not None:
            tmp = args.dir
            tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
        if args.only in (None, "short"):
            short_corpus(tmp, args.memories, args.repeat)
        if args.only in (None, "prose"):
            prose_corpus(tmp, args.memories, max(10, args.repeat // 5))
    print(f"(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
