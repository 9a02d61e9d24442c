"""The write path: fan-out, batches, write policy, attribution, LTM admission, sequences (inventory §3)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from paxm_core import (
    ConfigError,
    MemoryItem,
    MemoryOrigin,
    MemoryScope,
    Provenance,
    ProviderError,
    SearchQuery,
    TurnContext,
    UsageError,
    WriteError,
)
from paxm_core.api.timefmt import format_time
from paxm_core.router import PutPolicy, Route, SearchPolicy
from paxm_core.router.admission import fingerprint
from paxm_core.session_sequence import SessionSequenceStore

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


def test_writes_go_to_every_route_and_refs_are_sorted(fakes: Any, make_router: Any) -> None:
    zed, alpha = fakes.MemoryProvider("zed"), fakes.MemoryProvider("alpha")
    router = make_router({"zed": zed, "alpha": alpha})
    items = [MemoryItem("first", id="1"), MemoryItem("second", id="2")]
    result = router.put(items, PutPolicy([Route("zed"), Route("alpha")]))
    assert [r.to_json() for r in result.refs] == [
        {"provider": "alpha", "id": "1"},
        {"provider": "alpha", "id": "2"},
        {"provider": "zed", "id": "1"},
        {"provider": "zed", "id": "2"},
    ]
    assert result.to_json() == {"refs": [r.to_json() for r in result.refs]}
    assert set(zed.items) == set(alpha.items) == {"1", "2"}


def test_refs_carry_the_route_name_whatever_the_provider_called_itself(fakes: Any, make_router: Any) -> None:
    from paxm_core import MemoryRef

    class SelfNamed(fakes.BatchMemoryProvider):  # type: ignore[misc,name-defined]
        def put_batch(self, items: Any, deadline: Any) -> Any:
            refs = super().put_batch(items, deadline)
            return [MemoryRef("its-own-name", r.id) if i % 2 else r for i, r in enumerate(refs)]

    inner, plain = SelfNamed("inner"), fakes.BatchMemoryProvider("plain")
    router = make_router({"work": inner, "plain": plain})
    items = [MemoryItem(f"item {i}", id=str(i)) for i in range(3)]
    result = router.put(items, PutPolicy([Route("work"), Route("plain")]))
    assert [(r.provider, r.id) for r in result.refs] == [
        ("plain", "0"),
        ("plain", "1"),
        ("plain", "2"),
        ("work", "0"),
        ("work", "1"),
        ("work", "2"),
    ]


def test_put_batch_used_when_supported_else_sequential(fakes: Any, make_router: Any) -> None:
    batch, single = fakes.BatchMemoryProvider("batch"), fakes.MemoryProvider("single")
    router = make_router({"batch": batch, "single": single})
    router.put([MemoryItem(f"item {i}", id=str(i)) for i in range(3)], PutPolicy())
    assert batch.batches == [3]
    assert single.put_calls == 3


def test_sequential_put_stops_at_first_error(fakes: Any, make_router: Any) -> None:
    class FailsSecond(fakes.MemoryProvider):  # type: ignore[misc,name-defined]
        def put(self, item: Any, deadline: Any) -> Any:
            if item.id == "2":
                raise ProviderError(self.name, "put", "disk full")
            return super().put(item, deadline)

    provider = FailsSecond("p")
    router = make_router({"p": provider})
    items = [MemoryItem(f"item {i}", id=str(i)) for i in (1, 2, 3)]
    result = router.put(items, PutPolicy([Route("p", required=False)]))
    assert result.refs == [] and result.provider_errors[0].error == "disk full"
    assert set(provider.items) == {"1"}  # item 3 was never attempted
    with pytest.raises(WriteError, match="p: disk full"):
        router.put(items, PutPolicy([Route("p", required=True)]))


def test_write_errors_and_empty_input(fakes: Any, make_router: Any) -> None:
    router = make_router({"p": fakes.MemoryProvider("p")})
    assert router.put([], PutPolicy()).refs == []
    with pytest.raises(UsageError, match="memory text is required"):
        router.put([MemoryItem("   ")], PutPolicy())
    with pytest.raises(ConfigError, match="'nope' in put policy is not enabled"):
        router.put([MemoryItem("x")], PutPolicy([Route("nope")]))
    with pytest.raises(ConfigError, match="no writable memory providers"):
        make_router({}).put([MemoryItem("x")], PutPolicy())


def test_write_policy_sets_tier_and_expiry(fakes: Any, make_router: Any) -> None:
    provider = fakes.MemoryProvider("p")
    router = make_router({"p": provider}, clock=clock)
    stm = PutPolicy(tier="STM", expires_after=86400)
    created = NOW - timedelta(hours=1)
    router.put([MemoryItem("undated", id="a"), MemoryItem("dated", id="b", created_at=created)], stm)
    assert provider.items["a"].tier == "stm" and provider.items["a"].expires_at == NOW + timedelta(days=1)
    assert provider.items["b"].expires_at == created + timedelta(days=1)
    explicit = NOW + timedelta(minutes=5)
    router.put([MemoryItem("keeps its own", id="c", tier="ltm", expires_at=explicit)], stm)
    assert provider.items["c"].tier == "ltm" and provider.items["c"].expires_at == explicit


def test_attribution_is_synced_into_canonical_metadata(fakes: Any, make_router: Any) -> None:
    provider = fakes.MemoryProvider("p")
    router = make_router({"p": provider})
    item = MemoryItem(
        "attributed",
        id="1",
        metadata={"paxm_user_id": "forged", "paxm_scope_id": "forged", "topic": "deploy"},
        origin=MemoryOrigin(user_id="ann", agent_id="codex-ann"),
        provenance=Provenance(user_id="ignored", scope_type="team", scope_id="core"),
        turn=TurnContext(session_id="sess", turn_id="turn-7"),
    )
    router.put([item], PutPolicy(scope=MemoryScope("personal", "ann")))
    stored = provider.puts[0]
    assert stored.metadata == {
        "topic": "deploy",
        "paxm_user_id": "ann",
        "paxm_agent_id": "codex-ann",
        "paxm_session_id": "sess",
        "paxm_turn_id": "turn-7",
        "paxm_scope_type": "team",
        "paxm_scope_id": "core",
        "sequence": stored.metadata["sequence"],
    }
    assert stored.origin == MemoryOrigin("ann", "codex-ann", "sess", "turn-7")
    assert stored.scope == MemoryScope("team", "core")  # provenance beat the policy default
    assert stored.provenance == Provenance("ann", "codex-ann", "team", "core")


def test_policy_scope_applies_when_item_has_none(fakes: Any, make_router: Any) -> None:
    provider = fakes.MemoryProvider("p")
    make_router({"p": provider}).put([MemoryItem("x", id="1")], PutPolicy(scope=MemoryScope("team", "core")))
    assert provider.puts[0].scope == MemoryScope("team", "core")
    assert provider.puts[0].metadata["paxm_scope_type"] == "team"


def test_attribution_round_trip_through_string_metadata_provider(fakes: Any, make_router: Any) -> None:
    provider = fakes.StringMetadataProvider("remote")
    router = make_router({"remote": provider})
    item = MemoryItem(
        "the build cache lives in /var/cache/build",
        origin=MemoryOrigin("ann", "claude-ann", "s-1", "t-1"),
        scope=MemoryScope("team", "infra"),
        tier="ltm",
    )
    router.put([item], PutPolicy())
    stored = next(iter(provider.items.values()))
    assert stored.origin == MemoryOrigin() and stored.scope == MemoryScope()  # only strings survived
    result = router.search(SearchQuery("build cache"), SearchPolicy())
    (hit,) = result.hits
    assert hit.origin == MemoryOrigin("ann", "claude-ann", "s-1", "t-1")
    assert hit.scope == MemoryScope("team", "infra")
    assert hit.provenance == Provenance("ann", "claude-ann", "team", "infra")
    assert hit.to_json()["scope"] == {"type": "team", "id": "infra"}


def test_ltm_admission_fingerprint(fakes: Any, make_router: Any) -> None:
    provider = fakes.MemoryProvider("p")
    router = make_router({"p": provider}, clock=clock)
    scope = MemoryScope("personal", "ann")
    item = MemoryItem("  Use PNPM\nfor installs ", tier="ltm", scope=scope, metadata={"workspace": "/repo"})
    result = router.put([item], PutPolicy())
    expected = hashlib.sha256(b"use pnpm for installs\x00workspace=/repo\x00scope=personal:ann").hexdigest()
    assert result.refs[0].id == f"ltm_{expected}"
    stored = provider.puts[0]
    assert stored.metadata["paxm_fingerprint"] == expected
    assert stored.metadata["paxm_occurrences"] == "1"
    assert stored.metadata["paxm_first_seen_at"] == stored.metadata["paxm_last_seen_at"] == format_time(NOW)
    assert stored.created_at == NOW
    # same fact, different spacing/case -> same id; other workspace or scope -> different id
    again = router.put(
        [MemoryItem("use pnpm for INSTALLS", tier="ltm", scope=scope, metadata={"workspace": "/repo"})], PutPolicy()
    )
    assert again.refs[0].id == result.refs[0].id
    other = router.put([MemoryItem("use pnpm for installs", tier="ltm", scope=scope)], PutPolicy())
    assert other.refs[0].id != result.refs[0].id
    team = router.put(
        [MemoryItem("use pnpm for installs", scope=MemoryScope("team", "x"), metadata={"workspace": "/repo"})],
        PutPolicy(),
    )
    assert team.refs[0].id not in (result.refs[0].id, other.refs[0].id)


def test_admission_uses_admission_text_and_skips_stm_and_explicit_ids(fakes: Any, make_router: Any) -> None:
    provider = fakes.MemoryProvider("p")
    router = make_router({"p": provider})
    admitted = router.put([MemoryItem("rendered text", admission_text="core fact")], PutPolicy(tier="ltm"))
    assert admitted.refs[0].id == "ltm_" + fingerprint("core fact", {})
    stm = router.put([MemoryItem("short term")], PutPolicy(tier="stm", expires_after=60))
    explicit = router.put([MemoryItem("explicit", id="mine")], PutPolicy(tier="ltm"))
    assert not stm.refs[0].id.startswith("ltm_") and explicit.refs[0].id == "mine"
    assert "paxm_fingerprint" not in provider.items[stm.refs[0].id].metadata
    assert "paxm_fingerprint" not in provider.items["mine"].metadata


def test_session_sequences_are_monotonic_and_explicit_ones_kept(fakes: Any, make_router: Any) -> None:
    provider = fakes.MemoryProvider("p")
    router = make_router({"p": provider}, clock=clock)
    origin = MemoryOrigin(session_id="s")
    items = [MemoryItem(f"m{i}", id=str(i), origin=origin, created_at=NOW) for i in range(3)]
    router.put(items, PutPolicy())
    seqs = [int(provider.items[str(i)].metadata["sequence"]) for i in range(3)]
    floor = int(NOW.timestamp()) * 10**9
    assert seqs == [floor, floor + 1, floor + 2]
    router.put([MemoryItem("backfill", id="b", origin=origin, metadata={"sequence": "7"})], PutPolicy())
    assert provider.items["b"].metadata["sequence"] == "7"
    router.put([MemoryItem("no session", id="n")], PutPolicy())
    assert "sequence" not in provider.items["n"].metadata


class _CountingStore(SessionSequenceStore):
    """The persistent store, counting its reservations."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.calls: list[tuple[str, int]] = []

    def next_many(self, requests: Sequence[tuple[str, int]]) -> list[int]:
        self.calls.append(("next_many", len(requests)))
        return super().next_many(requests)


def test_a_batch_write_reserves_its_sequences_in_one_call(fakes: Any, make_router: Any, tmp_path: Path) -> None:
    provider = fakes.MemoryProvider("p")
    store = _CountingStore(tmp_path / "seq.sqlite")
    router = make_router({"p": provider}, clock=clock, sequence_allocator=store)
    items = [
        MemoryItem(f"m{i}", id=str(i), origin=MemoryOrigin(session_id=f"s{i % 2}"), created_at=NOW) for i in range(5)
    ]
    items.append(MemoryItem("explicit", id="x", origin=MemoryOrigin(session_id="s0"), metadata={"sequence": "7"}))
    items.append(MemoryItem("no session", id="n"))
    router.put(items, PutPolicy())
    floor = int(NOW.timestamp()) * 10**9
    assert store.calls == [("next_many", 5)]  # the explicit and session-less items need none
    assert [int(provider.items[str(i)].metadata["sequence"]) for i in range(5)] == [
        floor,
        floor,
        floor + 1,
        floor + 1,
        floor + 2,
    ]
    assert provider.items["x"].metadata["sequence"] == "7"
    router.put([MemoryItem("one", id="one", origin=MemoryOrigin(session_id="s1"), created_at=NOW)], PutPolicy())
    assert store.calls[-1] == ("next_many", 1)  # one item is a batch of one
    assert provider.items["one"].metadata["sequence"] == str(floor + 2)


def test_put_to_provider_uses_the_same_pipeline(fakes: Any, make_router: Any) -> None:
    a, b = fakes.MemoryProvider("a"), fakes.MemoryProvider("b")
    router = make_router({"a": a, "b": b}, clock=clock)
    policy = PutPolicy([Route("a"), Route("b")], tier="stm", expires_after=3600, scope=MemoryScope("personal", "ann"))
    refs = router.put_to_provider("b", [MemoryItem("episode", id="ep-1")], 5.0, policy=policy)
    assert [r.to_json() for r in refs] == [{"provider": "b", "id": "ep-1"}]
    assert a.items == {}
    stored = b.items["ep-1"]
    assert stored.tier == "stm" and stored.expires_at == NOW + timedelta(hours=1)
    assert stored.metadata["paxm_scope_id"] == "ann"
    failing = fakes.ScriptedProvider("f", error=ProviderError("f", "put", "503", retryable=True))
    router2 = make_router({"f": failing})
    with pytest.raises(WriteError, match="f: 503"):
        router2.put_to_provider("f", [MemoryItem("x", id="1")], 1.0)
    with pytest.raises(ConfigError):
        router2.put_to_provider("missing", [MemoryItem("x")], 1.0)


def test_cleanup_expired_sums_capable_providers(fakes: Any, make_router: Any) -> None:
    batch = fakes.BatchMemoryProvider("batch")
    plain = fakes.MemoryProvider("plain")
    router = make_router({"batch": batch, "plain": plain})
    past = datetime.now(UTC) - timedelta(hours=1)
    router.put([MemoryItem(f"old {i}", id=str(i), expires_at=past) for i in range(3)], PutPolicy([Route("batch")]))
    router.put([MemoryItem("fresh", id="f")], PutPolicy([Route("batch")]))
    assert router.cleanup_expired(limit=2) == 2
    assert router.cleanup_expired() == 1
    assert set(batch.items) == {"f"}


def test_cleanup_required_failure_raises(fakes: Any, make_router: Any) -> None:
    class Broken(fakes.BatchMemoryProvider):  # type: ignore[misc,name-defined]
        def cleanup_expired(self, limit: int, deadline: Any) -> int:
            raise RuntimeError("locked")

    router = make_router({"x": Broken("x")}, required={"x"})
    with pytest.raises(ProviderError, match="x cleanup_expired: locked"):
        router.cleanup_expired()
    assert make_router({"x": Broken("x")}).cleanup_expired() == 0


def test_close_closes_providers_and_is_idempotent(fakes: Any, make_router: Any) -> None:
    provider = fakes.MemoryProvider("p")
    router = make_router({"p": provider})
    router.search(SearchQuery("x"), SearchPolicy())
    router.close()
    router.close()
    assert provider.closed
    with pytest.raises(Exception, match="closed"):
        router.search(SearchQuery("x"), SearchPolicy())


def test_runtime_capabilities_narrow_put_batch(fakes: Any, make_router: Any) -> None:
    class Declared(fakes.BatchMemoryProvider):  # type: ignore[misc,name-defined]
        """Has a put_batch method but its runtime advertisement says no (a JSON-RPC plugin)."""

        def capabilities(self) -> frozenset[str]:
            return frozenset({"attribution"})

    provider = Declared("rpc")
    make_router({"rpc": provider}).put([MemoryItem("a", id="1"), MemoryItem("b", id="2")], PutPolicy())
    assert provider.batches == [] and provider.put_calls == 2
