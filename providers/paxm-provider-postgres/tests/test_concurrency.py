"""Eight writer processes on one database: nothing lost, nothing duplicated, LTM counters exact."""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

from pgserver import PASSWORD_ENV, PgServer, pg_config

from paxm_core import Deadline, MemoryItem, SearchQuery
from paxm_provider_postgres.provider import PostgresProvider

WRITERS = 8
PER_WRITER = 40
LTM_ROUNDS = 25
SHARED = 10


def _writer(args: tuple[str, str, int, str]) -> int:
    dsn, schema, index, password = args
    os.environ[PASSWORD_ENV] = password
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from paxm_core import ProviderConfig

    config = ProviderConfig(
        type="postgres",
        user_id="alice",
        extra={"dsn": dsn, "password": f"env:{PASSWORD_ENV}", "schema": schema, "teams": ["platform"]},
    )
    prov = PostgresProvider("pg", config)
    try:
        d = Deadline.after(120)
        # Own memories, each delivered twice (a retried delivery), in batches of 5.
        mine = [MemoryItem(id=f"w{index}-{i}", text=f"writer {index} note {i} osprey") for i in range(PER_WRITER)]
        for start in range(0, PER_WRITER, 5):
            batch = mine[start : start + 5]
            prov.put_batch(batch, d)
            prov.put_batch(list(reversed(batch)), d)
        # Shared ids every writer re-delivers: the last write wins, one row each.
        shared = [MemoryItem(id=f"shared-{i}", text=f"shared team osprey {i}") for i in range(SHARED)]
        prov.put_batch(shared, d)
        # One LTM memory re-observed by every writer: occurrences must add up exactly.
        for _ in range(LTM_ROUNDS):
            prov.put(
                MemoryItem(
                    id="ltm-osprey",
                    text="the team prefers osprey for deploys",
                    tier="ltm",
                    metadata={"paxm_fingerprint": "fp-osprey", "paxm_occurrences": "1"},
                ),
                d,
            )
        return PER_WRITER
    finally:
        prov.close()


def test_eight_writer_processes_lose_and_duplicate_nothing(pg_server: PgServer, schema: str) -> None:
    setup = PostgresProvider("pg", pg_config(pg_server, schema))
    setup.health(Deadline.after(30))  # migrate once up front; the writers race on data only
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(WRITERS) as pool:
        done = pool.map(
            _writer, [(pg_server.dsn(), schema, i, os.environ[PASSWORD_ENV]) for i in range(WRITERS)], chunksize=1
        )
    assert done == [PER_WRITER] * WRITERS
    import psycopg

    with psycopg.connect(pg_server.superuser_conninfo("paxm")) as conn:
        total, distinct = conn.execute(f"SELECT count(*), count(DISTINCT id) FROM {schema}.paxm_memories").fetchone()  # type: ignore[misc]
        occurrences, meta = conn.execute(
            f"SELECT occurrences, metadata->>'paxm_occurrences' FROM {schema}.paxm_memories WHERE id = 'ltm-osprey'"
        ).fetchone()  # type: ignore[misc]
    assert total == distinct == WRITERS * PER_WRITER + SHARED + 1
    assert occurrences == WRITERS * LTM_ROUNDS and meta == str(WRITERS * LTM_ROUNDS)
    hits = setup.search(SearchQuery("osprey deploys", limit=3), Deadline.after(10))
    assert hits[0].id == "ltm-osprey" and hits[0].metadata["paxm_occurrences"] == str(WRITERS * LTM_ROUNDS)
    setup.close()
