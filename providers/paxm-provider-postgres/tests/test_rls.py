"""The row-level security recipe in docs/providers/postgres.md, run verbatim against a real server.

The provider's scope filter is not authorization; this proves the documented database setup
is: a config that claims another user's id recalls none of that user's rows and cannot write.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pgserver import PgServer, pg_config

from paxm_core import Deadline, MemoryItem, MemoryScope, ProviderError, SearchQuery
from paxm_provider_postgres.provider import PostgresProvider

DOC = Path(__file__).resolve().parents[3] / "docs" / "providers" / "postgres.md"


def _doc_sql() -> str:
    blocks = re.findall(r"```sql\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1, "the postgres doc should hold exactly one SQL recipe"
    return str(blocks[0])


def _as(server: PgServer, role: str, user_id: str, monkeypatch: pytest.MonkeyPatch) -> PostgresProvider:
    monkeypatch.setenv("PAXM_TEST_RLS_PW", "change-me")
    config = pg_config(
        server, "paxm", dsn=server.dsn(user=role), password="env:PAXM_TEST_RLS_PW", user_id=user_id, teams=["platform"]
    )
    return PostgresProvider("pg", config)


def test_documented_row_level_security_enforces_scopes(pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
    owner = PostgresProvider("pg", pg_config(pg_server, "paxm"))
    assert owner.ensure_target(Deadline.after(30))[1] == "created"
    owner.close()
    pg_server.sql(_doc_sql())

    alice = _as(pg_server, "alice", "alice", monkeypatch)
    bob = _as(pg_server, "bob", "bob", monkeypatch)
    d = Deadline.after(10)
    try:
        alice.put(MemoryItem(id="a1", text="alice private albatross"), d)
        alice.put(MemoryItem(id="t1", text="team albatross decision", scope=MemoryScope("team", "platform")), d)
        bob.put(MemoryItem(id="b1", text="bob private albatross"), d)
        # Bob re-observes the team memory: an update of another writer's team row is allowed.
        bob.put(MemoryItem(id="t1", text="team albatross decision", scope=MemoryScope("team", "platform")), d)
        assert {h.id for h in alice.search(SearchQuery("albatross", limit=10), d)} == {"a1", "t1"}
        assert {h.id for h in bob.search(SearchQuery("albatross", limit=10), d)} == {"b1", "t1"}
    finally:
        alice.close()
        bob.close()

    # Alice edits her config to claim Bob's user id: the database still shows her only her rows.
    forged = _as(pg_server, "alice", "bob", monkeypatch)
    try:
        assert {h.id for h in forged.search(SearchQuery("albatross", limit=10), d)} == {"t1"}
        with pytest.raises(ProviderError, match="permission denied"):
            forged.put(MemoryItem(id="b2", text="planted in bob's scope"), d)
    finally:
        forged.close()
    import psycopg

    with psycopg.connect(pg_server.superuser_conninfo("paxm")) as conn:
        rows = conn.execute("SELECT id, scope, writer FROM paxm.paxm_memories ORDER BY id").fetchall()
    assert rows == [("a1", "personal:alice", "alice"), ("b1", "personal:bob", "bob"), ("t1", "team:platform", "bob")]
