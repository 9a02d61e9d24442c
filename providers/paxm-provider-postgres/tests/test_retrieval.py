"""Recall through postgres matches the SQLite provider's on the same memories and queries."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from pgserver import PgServer, pg_config

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_postgres.provider import PostgresProvider
from paxm_provider_sqlite.provider import SQLiteProvider

MEMORIES = [
    ("ident", "Set provider_search_timeout to 800ms in config.yaml"),
    ("camel", "maxRetryBudget defaults to five retries"),
    ("version", "Upgrade pinned to v0.9.14 after the cache bug"),
    ("cjk", "数据库连接超时的问题已经修复"),
    ("morph", "We deployed the indexing service yesterday"),
    ("phrase", "the build cache lives on the shared runner"),
    ("other", "the shared runner reboots nightly; the build waits"),
    ("noise", "lunch menu for friday: soup and bread"),
]
QUERIES = [
    "provider search timeout",
    "providerSearchTimeout",
    "max retry budget",
    "0.9.14",
    "连接超时",
    "deploy index services",
    "the build cache lives on the shared runner",
    "shared runner build",
    "soup weather tomorrow",
    "nothing matches zxqv",
]


@pytest.fixture(scope="module")
def both(
    pg_server: PgServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SQLiteProvider, PostgresProvider]]:
    sqlite = SQLiteProvider("s", ProviderConfig(path=str(tmp_path_factory.mktemp("s") / "m.sqlite")))
    pg = PostgresProvider("p", pg_config(pg_server, "retrieval_parity"))
    items = [MemoryItem(id=i, text=t) for i, t in MEMORIES]
    sqlite.put_batch(items, Deadline.after(10))
    pg.put_batch(items, Deadline.after(10))
    yield sqlite, pg
    sqlite.close()
    pg.close()
    pg_server.sql("DROP SCHEMA retrieval_parity CASCADE")


@pytest.mark.parametrize("query", QUERIES)
def test_same_hits_and_scores_as_sqlite(both: tuple[SQLiteProvider, PostgresProvider], query: str) -> None:
    sqlite, pg = both
    want = [(h.id, round(h.relevance, 6)) for h in sqlite.search(SearchQuery(query, limit=5), Deadline.after(10))]
    got = [(h.id, round(h.relevance, 6)) for h in pg.search(SearchQuery(query, limit=5), Deadline.after(10))]
    assert {i for i, _ in got} == {i for i, _ in want}
    assert dict(got) == dict(want)
    # Same winner whenever the stage score decides it; exact-score ties are ordered by the
    # engine's rank (FTS5 bm25 there, ts_rank with term proximity here), so either may lead.
    if want and (len(want) == 1 or want[0][1] > want[1][1]):
        assert got[0] == want[0]
    assert [s for _, s in got] == [s for _, s in want]


def test_long_hits_are_excerpted_like_sqlite(both: tuple[SQLiteProvider, PostgresProvider]) -> None:
    sqlite, pg = both
    filler = "\n".join(f"line {i}: routine log output without anything notable" for i in range(400))
    text = filler + "\nThe flamingo migration finished at 03:10 after the lock was released.\n" + filler
    item = MemoryItem(id="long", text=text)
    sqlite.put(item, Deadline.after(10))
    pg.put(item, Deadline.after(10))
    want = sqlite.search(SearchQuery("flamingo migration", limit=3), Deadline.after(10))[0]
    got = pg.search(SearchQuery("flamingo migration", limit=3), Deadline.after(10))[0]
    assert got.id == "long" and "flamingo migration finished" in got.text
    assert got.text == want.text and len(got.text.encode()) < 2500
    assert got.metadata["postgres_excerpted"] == "true"
    assert got.metadata["postgres_original_bytes"] == str(len(text.encode()))


def test_hits_carry_the_rank_times_and_metadata_as_stored(both: tuple[SQLiteProvider, PostgresProvider]) -> None:
    _, pg = both
    created = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    expires = datetime(2999, 1, 2, 3, 4, 5, 600000, tzinfo=UTC)
    meta = {"kind": "note", "owner": "Zoë 数据"}
    item = MemoryItem(id="stamped", text="the pelican rollout", created_at=created, expires_at=expires, metadata=meta)
    pg.put(item, Deadline.after(10))
    hit = pg.search(SearchQuery("pelican rollout", limit=3), Deadline.after(10))[0]
    assert hit.id == "stamped" and hit.raw_score_kind == "postgres_ts_rank"
    assert hit.raw_score is not None and hit.raw_score > 0
    assert hit.created_at == created and hit.expires_at == expires
    assert {k: hit.metadata[k] for k in meta} == meta
    # the newest memories (no query terms) carry no engine rank
    recent = pg.search(SearchQuery("", limit=1), Deadline.after(10))[0]
    assert recent.raw_score is None and recent.raw_score_kind == ""
