"""The SQLite provider at a year of memory: 1M x 256 B recall, a 300-word prompt, bytes on disk.

    uv run python benchmarks/scale_bench.py                  # 1M memories per corpus (minutes)
    uv run python benchmarks/scale_bench.py --memories 20000 # smoke size

Two corpora are generated at run time into a temporary directory (never committed):

* short: ``--memories`` x 256 B of upstream's payload (``benchmark adapter memory
  benchmarker<n>`` padded with ``x``); a recall hit on the middle marker, against the raw FTS5
  query upstream issues first (quoted terms OR-ed, bm25 order, LIMIT 50) on the same file;
  and the database's size on disk (main file + WAL after a checkpoint) per memory, against the
  256 bytes of raw text;
* prose: ``--memories`` x 256 B of prose-like text (function words + a Zipf vocabulary), and a
  300-word prompt naming one memory's unique marker.

Targets (issue #23): hit <= 0.5 ms and <= 3x raw FTS5; prompt <= 30 ms; size <= 3x the raw text.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import record  # noqa: E402
from sqlite_bench import (  # noqa: E402
    NO_LIMIT,
    _vocabulary,
    build_corpus,
    fresh,
    median_ms,
    payload,
    raw_fts,
    realistic,
    timed,
)

from paxm_core import SearchQuery  # noqa: E402


def on_disk(path: Path) -> int:
    """Bytes of the database file plus its WAL and shared-memory files, after a checkpoint."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def short_corpus(tmp: Path, count: int, repeat: int) -> None:
    prov = fresh(tmp, "short")
    built = build_corpus(prov, count, lambda i: payload(f"benchmarker{i:07d}", 256))
    print(f"short corpus: {count} x 256 B built in {built:.1f} s ({count / built:.0f} memories/s)")
    text = f"benchmarker{count // 2:07d}"
    query = SearchQuery(text, limit=5)
    hits = prov.search(query, NO_LIMIT)
    assert hits and text in hits[0].text, "the hit must be found"
    ours = median_ms(timed(lambda: prov.search(query, NO_LIMIT), repeat, warmup=5))
    raw_conn = sqlite3.connect(prov.path)
    base = median_ms(timed(raw_fts(raw_conn, text), repeat, warmup=5))
    raw_conn.close()
    ratio = ours / base
    ok = ours <= 0.5 and ratio <= 3.0
    print(f"  recall hit {ours:8.3f} ms  raw FTS5 {base:7.3f} ms  = {ratio:4.2f}x  (target <= 0.5 ms, <= 3x)")
    record(
        f"SQLite recall hit, {count // 1000}k x 256 B",
        ours,
        "ms",
        f"raw FTS5 {base:.3f} ms ({ratio:.2f}x)",
        "<= 0.5 ms, <= 3x raw FTS5",
        ok,
    )
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
    os.unlink(prov.path)


def prose_corpus(tmp: Path, count: int, repeat: int) -> None:
    rng = random.Random(7)
    vocab = _vocabulary(rng, 20_000)
    weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocab))))
    target = count // 3

    def prose(i: int) -> str:
        text = realistic(i, vocab, weights, 256)
        return f"{text} rollout{target:07d}" if i == target else text

    prov = fresh(tmp, "prose")
    built = build_corpus(prov, count, prose)
    print(f"prose corpus: {count} x 256 B built in {built:.1f} s")
    words = realistic(10**6, vocab, weights, 2400).split()[:299] + [f"rollout{target:07d}"]
    query = SearchQuery(" ".join(words), limit=5)
    hits = prov.search(query, NO_LIMIT)
    assert any(f"rollout{target:07d}" in h.text for h in hits), "the prompt's memory must be recalled"
    ours = median_ms(timed(lambda: prov.search(query, NO_LIMIT), repeat, warmup=2))
    raw_conn = sqlite3.connect(prov.path)
    base = median_ms(timed(raw_fts(raw_conn, query.text), max(3, repeat // 4), warmup=1))
    raw_conn.close()
    print(f"  300-word prompt          {ours:8.3f} ms  raw FTS5 OR-query {base:7.3f} ms  (target <= 30 ms)")
    record(
        f"300-word prompt, {count // 1000}k memories",
        ours,
        "ms",
        f"raw FTS5 OR of all terms {base:.1f} ms",
        "<= 30 ms",
        ours <= 30.0,
    )
    prov.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=1_000_000, help="memories per corpus")
    parser.add_argument("--repeat", type=int, default=200, help="timed recalls per row")
    parser.add_argument("--only", choices=("short", "prose"))
    args = parser.parse_args(argv)
    print(f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="paxm-scale-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if args.only in (None, "short"):
            short_corpus(tmp, args.memories, args.repeat)
        if args.only in (None, "prose"):
            prose_corpus(tmp, args.memories, max(10, args.repeat // 5))
    print(f"(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
