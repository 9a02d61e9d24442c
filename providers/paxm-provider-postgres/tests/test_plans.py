"""Every recall-path statement is index-driven on a realistic table: EXPLAIN shows no Seq Scan.

The planner is left alone (no ``enable_seqscan=off``): the table is big enough (30k rows with
skewed word frequencies) and ANALYZEd, as autovacuum would leave it, so the plans are the
ones production sees.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from corpus import corpus
from pgserver import PgServer, pg_config

from paxm_core import Deadline, MemoryItem, SearchQuery
from paxm_provider_postgres.provider import PostgresProvider

pytestmark = pytest.mark.slow

ROWS = 30_000
HASH = "9f2c" * 20


@pytest.fixture(scope="module")
def big(pg_server: PgServer) -> Iterator[PostgresProvider]:
    schema = "plans_corpus"
    prov = PostgresProvider("pg", pg_config(pg_server, schema, teams=["platform"]))
    items = corpus(ROWS)
    items.append(MemoryItem(id="hash", text=f"the signing key fingerprint is {HASH}"))
    items.append(MemoryItem(id="phrase", text="the team decided to use the build service for release"))
    for start in range(0, len(items), 1000):
        prov.put_batch(items[start : start + 1000], Deadline.after(120))
    pg_server.sql(f"ANALYZE {schema}.paxm_memories")
    yield prov
    prov.close()
    pg_server.sql(f"DROP SCHEMA {schema} CASCADE")


QUERIES: list[tuple[str, dict[str, Any], set[str]]] = [
    ("", {}, set()),  # recent
    (HASH, {}, {"verbatim"}),
    ("the team decided to use the build service", {}, {"exact_phrase_common"}),  # only common words
    ("config deploy service release build", {}, {"strict_common"}),
    ("kalo config", {}, {"strict_all_terms"}),
    ("kaloten mirabex deploy", {}, set()),
    ("zzzunknown kalomi tenvo pelqui", {}, {"relaxed_rare"}),
    ("zzzunknown deploy release", {}, {"relaxed_common"}),
    ("数据库 超时", {}, set()),
    ("kalo_mira_timeout v1.2.3", {"tiers": ("ltm",)}, set()),
    ("deploy service", {"metadata": {"workspace": "/repo/a"}, "filters": {"kind": "note"}}, set()),
]


def test_recall_statements_use_indexes(big: PostgresProvider, pg_server: PgServer) -> None:
    import psycopg

    db = big.database
    seen_branches: set[str] = set()
    plans: list[tuple[str, str]] = []
    with psycopg.connect(pg_server.superuser_conninfo("paxm")) as conn:
        for text, kwargs, branches in QUERIES:
            db.statement_log = []
            big.search(SearchQuery(text, limit=8, **kwargs), Deadline.after(30))
            assert big.last_trace is not None
            seen_branches |= set(big.last_trace.branches)
            assert branches <= set(big.last_trace.branches), (text, big.last_trace)
            assert db.statement_log, text
            for sql, params in db.statement_log:
                rows = conn.execute("EXPLAIN " + sql, params).fetchall()
                plans.append((text, "\n".join(str(r[0]) for r in rows)))
            db.statement_log = None
    assert {"verbatim", "exact_phrase_common", "strict_common", "strict_all_terms", "relaxed_rare"} <= seen_branches
    scans = [(text, plan) for text, plan in plans if "Seq Scan" in plan]
    assert not scans, "sequential scans on the recall path:\n" + "\n\n".join(f"{t!r}:\n{p}" for t, p in scans)
