"""LTM consolidation, fingerprint conflicts, STM expiry and eval cleanup on a real server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from pgserver import PgServer, pg_config

from paxm_core import Deadline, MemoryItem, ProviderError, SearchQuery
from paxm_provider_postgres.provider import PostgresProvider


@pytest.fixture
def prov(pg_server: PgServer, schema: str) -> Iterator[PostgresProvider]:
    provider = PostgresProvider("pg", pg_config(pg_server, schema))
    yield provider
    provider.close()


def _ltm(seen: datetime, occurrences: int = 1, fingerprint: str = "fp1") -> MemoryItem:
    stamp = seen.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return MemoryItem(
        id="ltm_1",
        text="prefer ruff over flake8",
        tier="ltm",
        created_at=seen,
        metadata={
            "paxm_fingerprint": fingerprint,
            "paxm_occurrences": str(occurrences),
            "paxm_first_seen_at": stamp,
            "paxm_last_seen_at": stamp,
        },
    )


def test_ltm_reobservations_consolidate(prov: PostgresProvider) -> None:
    d = Deadline.after(10)
    t0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
    prov.put(_ltm(t0), d)
    prov.put(_ltm(t0 + timedelta(days=2), occurrences=2), d)
    prov.put(_ltm(t0 - timedelta(days=1)), d)  # a late delivery of an older observation
    hit = prov.search(SearchQuery("ruff flake8", limit=3), d)[0]
    assert hit.metadata["paxm_occurrences"] == "4"
    assert hit.metadata["paxm_first_seen_at"] == "2026-01-04T12:00:00.000000Z"
    assert hit.metadata["paxm_last_seen_at"] == "2026-01-07T12:00:00.000000Z"
    assert hit.created_at == t0
    with pytest.raises(ProviderError, match="fingerprint conflict"):
        prov.put(_ltm(t0, fingerprint="other"), d)
    assert prov.search(SearchQuery("ruff flake8", limit=3), d)[0].metadata["paxm_occurrences"] == "4"


def test_a_failed_item_rolls_back_its_whole_batch(prov: PostgresProvider) -> None:
    d = Deadline.after(10)
    prov.put(_ltm(datetime(2026, 1, 5, tzinfo=UTC)), d)
    with pytest.raises(ProviderError):
        prov.put_batch(
            [MemoryItem(id="fresh", text="batch sibling quokka"), _ltm(datetime.now(UTC), fingerprint="x")], d
        )
    assert prov.search(SearchQuery("quokka", limit=3), d) == []


def test_expired_memories_are_hidden_then_cleaned(prov: PostgresProvider) -> None:
    d = Deadline.after(10)
    now = datetime.now(UTC)
    prov.put_batch(
        [
            MemoryItem(id=f"old{i}", text=f"stale wombat {i}", tier="stm", expires_at=now - timedelta(minutes=1))
            for i in range(3)
        ]
        + [MemoryItem(id="live", text="live wombat", tier="stm", expires_at=now + timedelta(hours=1))],
        d,
    )
    assert [h.id for h in prov.search(SearchQuery("wombat", limit=10), d)] == ["live"]
    assert prov.cleanup_expired(2, d) == 2
    assert prov.cleanup_expired(100, d) == 1
    assert prov.cleanup_expired(100, d) == 0
    assert [h.id for h in prov.search(SearchQuery("wombat", limit=10, tiers=("stm",)), d)] == ["live"]


def test_eval_cleanup_removes_only_this_users_eval_memories(pg_server: PgServer, schema: str) -> None:
    alice = PostgresProvider("pg", pg_config(pg_server, schema, teams=["platform"]))
    bob = PostgresProvider("pg", pg_config(pg_server, schema, user_id="bob", teams=["platform"]))
    d = Deadline.after(10)
    try:
        alice.put(MemoryItem(id="paxm-eval-a", text="eval narwhal alice"), d)
        alice.put(MemoryItem(id="keep-a", text="real narwhal alice"), d)
        bob.put(MemoryItem(id="paxm-eval-b", text="eval narwhal bob"), d)
        alice.cleanup_eval_scope(d)
        assert {h.id for h in alice.search(SearchQuery("narwhal", limit=10), d)} == {"keep-a"}
        assert {h.id for h in bob.search(SearchQuery("narwhal", limit=10), d)} == {"paxm-eval-b"}
    finally:
        alice.close()
        bob.close()
