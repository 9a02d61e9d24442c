"""Benchmark of the postgres provider on a real local server: recall latency and write throughput.

Run from the repository root::

    uv run --all-packages python benchmarks/postgres_bench.py            # 100k memories
    uv run --all-packages python benchmarks/postgres_bench.py --quick    # 10k memories, a smoke run

A throwaway server (Debian's ``postgresql`` binaries, as the tests use) is started in a
temporary directory on a free 127.0.0.1 port and removed afterwards.  The corpus is the
skewed generator of ``providers/paxm-provider-postgres/tests/corpus.py``.

Baselines:

* recall: the raw SQL query a hand-written integration would issue for the same text: one
  full-text match of the query's terms OR-ed (quoted lexemes, the visible scopes, unexpired),
  ``ts_rank`` order, ``LIMIT 8``, on a direct psycopg connection.  The provider adds the
  analysis, document-frequency probes, staged selection, row loading and excerpting.
* writes: the same rows sent as one multi-row ``INSERT ... ON CONFLICT`` per batch on a direct
  connection, with the analysis done beforehand (so the ratio is the provider's overhead).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "providers" / "paxm-provider-postgres" / "tests"))

from corpus import corpus  # noqa: E402
from pgserver import APP_PASSWORD, PASSWORD_ENV, find_bin_dir, pg_config, start_server  # noqa: E402

from paxm_core import Deadline, MemoryItem, SearchQuery  # noqa: E402
from paxm_provider_postgres.provider import PostgresProvider  # noqa: E402
from paxm_provider_postgres.search import tsquery_of, tsvector_text  # noqa: E402
from paxm_provider_sqlite.retrieval.analyzer import analyze_query, index_text  # noqa: E402

QUERIES = [
    "kalo config",
    "deploy service release",
    "the team decided to use the build service",
    "kalomi_tenvo_timeout",
    "v1.2.3 upgrade",
    "数据库 超时",
    "zzzunknown kalomi tenvo pelqui",
    "why did the release with config fail on deploy",
]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _raw_query(conn: Any, schema: str, text: str, scopes: list[str]) -> None:
    groups = analyze_query(text).groups
    if not groups:
        return
    q = " | ".join(tsquery_of(g) for g in groups)
    conn.execute(
        f"""SELECT id, text, metadata FROM "{schema}".paxm_memories AS m
            WHERE m.tsv @@ %s::tsquery AND m.scope = ANY(%s) AND (m.expires_at IS NULL OR m.expires_at > now())
            ORDER BY ts_rank(m.tsv, %s::tsquery) DESC LIMIT 8""",
        (q, scopes, q),
    ).fetchall()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10k memories, few repetitions")
    parser.add_argument("--memories", type=int, default=0, help="corpus size (default 100000, quick 10000)")
    parser.add_argument("--rounds", type=int, default=0, help="recall repetitions per query (default 30, quick 8)")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    args = parser.parse_args(argv)
    count = args.memories or (10_000 if args.quick else 100_000)
    rounds = args.rounds or (8 if args.quick else 30)
    bin_dir = find_bin_dir()
    if bin_dir is None:
        print("postgres bench: PostgreSQL server binaries not found (apt-get install postgresql)")
        return 1
    import os

    import psycopg

    os.environ[PASSWORD_ENV] = APP_PASSWORD
    server = start_server(bin_dir)
    figures: dict[str, Any] = {"memories": count}
    try:
        schema = "bench"
        prov = PostgresProvider("pg", pg_config(server, schema, teams=["platform"], pool_size=4))
        items = corpus(count)
        batch = 500
        started = time.perf_counter()
        for start in range(0, count, batch):
            prov.put_batch(items[start : start + batch], Deadline.after(600))
        elapsed = time.perf_counter() - started
        figures["write_batch_per_s"] = count / elapsed

        # Single puts (the hook path writes one memory at a time).
        singles = [MemoryItem(id=f"single-{i}", text=items[i].text) for i in range(min(500, count))]
        started = time.perf_counter()
        for item in singles:
            prov.put(item, Deadline.after(60))
        figures["write_single_per_s"] = len(singles) / (time.perf_counter() - started)

        # Baseline writes: analysis done up front, one multi-row upsert per batch.
        raw_items = corpus(min(count, 10_000), seed=11)
        prepared = []
        for item in raw_items:
            indexed = index_text(item.text)
            prepared.append((f"raw-{item.id}", item.text, indexed.terms, indexed.extras, tsvector_text(indexed)))
        with psycopg.connect(server.superuser_conninfo("paxm")) as conn:
            started = time.perf_counter()
            for start in range(0, len(prepared), batch):
                with conn.cursor() as cur:
                    cur.executemany(
                        f"""INSERT INTO "{schema}".paxm_memories (id, text, metadata, scope, created_at, updated_at,
                              terms, extras, tsv) VALUES (%s, %s, '{{}}', 'personal:raw', now(), now(), %s, %s,
                              %s::tsvector) ON CONFLICT (id) DO NOTHING""",
                        prepared[start : start + batch],
                    )
                conn.commit()
            figures["write_raw_per_s"] = len(prepared) / (time.perf_counter() - started)
            conn.execute(f'ANALYZE "{schema}".paxm_memories')
            conn.commit()

            scopes = prov.settings.scopes()
            provider_ms: list[float] = []
            raw_ms: list[float] = []
            d = Deadline.after(600)
            for text in QUERIES:  # warm both paths
                prov.search(SearchQuery(text, limit=8), d)
                _raw_query(conn, schema, text, scopes)
            for _ in range(rounds):
                for text in QUERIES:
                    t0 = time.perf_counter()
                    prov.search(SearchQuery(text, limit=8), d)
                    provider_ms.append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    _raw_query(conn, schema, text, scopes)
                    raw_ms.append((time.perf_counter() - t0) * 1000)
        prov.close()
        figures.update(
            recall_median_ms=statistics.median(provider_ms),
            recall_p95_ms=_pct(provider_ms, 0.95),
            raw_median_ms=statistics.median(raw_ms),
            raw_p95_ms=_pct(raw_ms, 0.95),
        )
    finally:
        server.stop()
    f = figures
    print(f"postgres bench: {count} memories, {rounds} rounds x {len(QUERIES)} queries")
    print(
        f"  recall   median {f['recall_median_ms']:.2f} ms  p95 {f['recall_p95_ms']:.2f} ms   "
        f"raw SQL median {f['raw_median_ms']:.2f} ms  p95 {f['raw_p95_ms']:.2f} ms   "
        f"ratio median {f['recall_median_ms'] / f['raw_median_ms']:.2f}x  "
        f"p95 {f['recall_p95_ms'] / f['raw_p95_ms']:.2f}x"
    )
    print(
        f"  writes   put_batch(500) {f['write_batch_per_s']:.0f}/s   put {f['write_single_per_s']:.0f}/s   "
        f"raw multi-row upsert {f['write_raw_per_s']:.0f}/s   "
        f"ratio {f['write_batch_per_s'] / f['write_raw_per_s']:.2f}x"
    )
    if args.json:
        print(json.dumps(f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
