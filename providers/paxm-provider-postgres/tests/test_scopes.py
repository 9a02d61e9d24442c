"""Two users and a team on one database: personal memories stay personal whatever the query says."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pgserver import PgServer, pg_config

from paxm_core import Deadline, MemoryItem, MemoryRef, MemoryScope, ProviderError, SearchQuery
from paxm_provider_postgres.provider import PostgresProvider

HOSTILE_METADATA = [
    {},
    {"paxm_user_id": "bob", "user_id": "bob"},
    {"paxm_scope_type": "personal", "paxm_scope_id": "bob", "scope": "personal:bob"},
    {"scopes": "personal:bob,team:platform", "teams": "secret-team", "workspace": ""},
    {"user_id": "bob' OR 1=1 --", "workspace": "' OR ''='"},
]


@pytest.fixture
def pair(pg_server: PgServer, schema: str) -> Iterator[tuple[PostgresProvider, PostgresProvider]]:
    alice = PostgresProvider("pg", pg_config(pg_server, schema, user_id="alice", teams=["platform"]))
    bob = PostgresProvider("pg", pg_config(pg_server, schema, user_id="bob", teams=["platform", "secret-team"]))
    yield alice, bob
    alice.close()
    bob.close()


def _ids(provider: PostgresProvider, text: str, **kwargs: object) -> set[str]:
    hits = provider.search(SearchQuery(text, limit=20, **kwargs), Deadline.after(10))  # type: ignore[arg-type]
    return {h.id for h in hits}


def test_personal_memories_stay_personal_and_team_memories_are_shared(
    pair: tuple[PostgresProvider, PostgresProvider],
) -> None:
    alice, bob = pair
    d = Deadline.after(10)
    alice.put(MemoryItem(id="a-personal", text="kestrel rollout note from alice"), d)
    bob.put(MemoryItem(id="b-personal", text="kestrel rollout note from bob"), d)
    bob.put(
        MemoryItem(id="b-secret", text="kestrel rollout secret team note", scope=MemoryScope("team", "secret-team")), d
    )
    alice.put(
        MemoryItem(
            id="team", text="kestrel rollout decision for the platform team", scope=MemoryScope("team", "platform")
        ),
        d,
    )
    for metadata in HOSTILE_METADATA:
        assert _ids(alice, "kestrel rollout", metadata=metadata) == {"a-personal", "team"}, metadata
        assert _ids(bob, "kestrel rollout", metadata=metadata) == {"b-personal", "b-secret", "team"}, metadata
    # Filters narrow, never widen: asking for bob's scope by filter from alice's config finds nothing.
    assert _ids(alice, "kestrel", filters={"paxm_scope_id": "bob"}) == set()
    assert _ids(alice, "kestrel", filters={"paxm_scope_id": "platform"}) == {"team"}
    # The no-terms recall (newest first) and the verbatim path obey the same scopes.
    assert _ids(alice, "") == {"a-personal", "team"}
    token = "f" * 70
    bob.put(MemoryItem(id="b-hash", text=f"bob's key id {token}"), d)
    assert _ids(alice, token) == set()
    assert _ids(bob, token) == {"b-hash"}
    hit = next(h for h in alice.search(SearchQuery("platform team decision", limit=5), d) if h.id == "team")
    assert hit.scope == MemoryScope("team", "platform") and hit.origin.user_id == ""


def test_a_user_cannot_write_into_or_delete_from_another_users_personal_scope(
    pair: tuple[PostgresProvider, PostgresProvider],
) -> None:
    alice, bob = pair
    d = Deadline.after(10)
    with pytest.raises(ProviderError, match="another user's personal scope"):
        alice.put(MemoryItem(id="forged", text="forged note", scope=MemoryScope("personal", "bob")), d)
    assert _ids(bob, "forged note") == set()
    bob.put(MemoryItem(id="b-only", text="bob private marmot"), d)
    alice.delete(MemoryRef("pg", "b-only"), d)
    assert _ids(bob, "marmot") == {"b-only"}
    # Reusing bob's id from alice's config cannot take his row over either.
    with pytest.raises(ProviderError, match="cannot see"):
        alice.put(MemoryItem(id="b-only", text="alice overwrites the marmot"), d)
    assert [h.text for h in bob.search(SearchQuery("marmot", limit=3), d)] == ["bob private marmot"]
    # An id in a scope both see may move between them (a personal note promoted to the team).
    alice.put(MemoryItem(id="promote", text="walrus runbook"), d)
    alice.put(MemoryItem(id="promote", text="walrus runbook", scope=MemoryScope("team", "platform")), d)
    assert _ids(bob, "walrus") == {"promote"}


def test_unscoped_writes_belong_to_the_writer(pair: tuple[PostgresProvider, PostgresProvider]) -> None:
    alice, bob = pair
    ref = alice.put(MemoryItem(text="unscoped pelican fact"), Deadline.after(10))
    assert _ids(bob, "pelican") == set()
    hits = alice.search(SearchQuery("pelican", limit=3), Deadline.after(10))
    assert [h.id for h in hits] == [ref.id] and hits[0].scope == MemoryScope("personal", "alice")
