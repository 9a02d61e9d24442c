"""The Zep provider through the real zep-cloud SDK against a local v4 server that records requests."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest
from zep_fake import Fault, ZepFake

from paxm_core import Deadline, ProviderConfig
from paxm_core.api.errors import ConfigError, DeadlineExceeded, ProviderError
from paxm_core.api.types import MemoryItem, MemoryOrigin, MemoryRef, MemoryScope, SearchQuery
from paxm_core.plugins import get_plugin_manager
from paxm_provider_zep.mapping import episode_metadata, normalize_relevance
from paxm_provider_zep.provider import ZepProvider


def make(zep: ZepFake, **overrides: object) -> ZepProvider:
    keys: dict[str, object] = {"api_key": zep.state.api_key, "base_url": zep.base_url, "user_id": "todd"}
    return ZepProvider("zep_main", ProviderConfig.of(type="zep", enabled=True, **(keys | overrides)))


def item(text: str, **kw: object) -> MemoryItem:
    return MemoryItem(text=text, **kw)  # type: ignore[arg-type]


def test_put_then_search_round_trips_through_the_sdk_with_exact_requests(zep: ZepFake) -> None:
    provider = make(zep)
    created = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    ref = provider.put(
        item(
            "We deploy with blue-green releases",
            id="ltm_abc",
            source="cli",
            created_at=created,
            tier="ltm",
            origin=MemoryOrigin(user_id="todd", agent_id="claude", session_id="s1", turn_id="t1"),
            scope=MemoryScope(type="personal", id="todd"),
            metadata={"sequence": "7", "workspace": "/w"},
        ),
        Deadline.after(5),
    )
    assert ref.provider == "zep_main" and ref.id
    lookup, create, add = zep.state.log[:3]
    assert (lookup.method, lookup.path, lookup.body) == ("POST", "/api/v4/users/lookup", {"user_id": "todd"})
    assert (create.method, create.path, create.body) == ("POST", "/api/v4/users", {"user_id": "todd"})
    graph_uuid = next(iter(zep.state.users.values()))["graph_uuid"]
    assert add.path == f"/api/v4/graphs/{graph_uuid}/episodes"
    assert add.idempotency_key == "paxm-zep_main-ltm_abc"
    assert add.body == {
        "data": "We deploy with blue-green releases",
        "type": "text",
        "source_description": "cli",
        "reference_time": "2026-03-01T12:00:00Z",
        "metadata": {
            "paxm_id": "ltm_abc",
            "paxm_tier": "ltm",
            "sequence": "7",
            "paxm_user_id": "todd",
            "paxm_agent_id": "claude",
            "paxm_session_id": "s1",
            "paxm_turn_id": "t1",
            "paxm_scope_type": "personal",
            "paxm_scope_id": "todd",
            "paxm_source": "cli",
        },
    }
    assert all(r.auth == "Api-Key z_test_key" for r in zep.state.log)

    hits = provider.search(SearchQuery(text="how do we deploy releases", limit=3), Deadline.after(5))
    search = zep.state.log[-1]
    assert search.path == f"/api/v4/graphs/{graph_uuid}/search/episodes"
    assert search.query == {"page_size": ["3"]} and search.body == {"query": "how do we deploy releases"}
    assert [h.id for h in hits] == [ref.id]
    hit = hits[0]
    assert hit.provider == "zep_main" and hit.text == "We deploy with blue-green releases"
    assert 0.0 < hit.relevance <= 1.0 and hit.score == hit.relevance
    assert hit.raw_score_kind == "zep_relevance" and hit.raw_score is not None
    assert hit.origin == MemoryOrigin("todd", "claude", "s1", "t1")
    assert hit.scope == MemoryScope("personal", "todd")
    assert hit.created_at == created and hit.tier == "ltm" and hit.source == "zep:episode"
    assert hit.metadata["zep_type"] == "episode" and hit.metadata["sequence"] == "7"


def test_target_is_resolved_once_and_an_existing_user_is_success(zep: ZepFake) -> None:
    first = make(zep)
    first.health(Deadline.after(5))
    second = make(zep)
    for _ in range(3):
        second.search(SearchQuery(text="anything"), Deadline.after(5))
    creates = zep.state.requests("POST", r"/users$")
    lookups = zep.state.requests("POST", r"/users/lookup$")
    assert len(creates) == 1  # the second provider found the user created by the first
    assert len(lookups) == 2  # one per provider instance, then cached
    assert second.ensure_target()[1] == "exists"


def test_concurrent_creation_conflict_counts_as_existing(zep: ZepFake) -> None:
    zep.state.faults.append(Fault("POST", r"/users/lookup$", status=404, times=1))
    make(zep).health(Deadline.after(5))  # creates the user
    zep.state.faults.append(Fault("POST", r"/users/lookup$", status=404, times=1))
    provider = make(zep)
    provider.health(Deadline.after(5))  # lookup 404 -> create 409 -> lookup again
    assert [r.path for r in zep.state.log[-3:-1]] == ["/api/v4/users", "/api/v4/users/lookup"]


def test_named_graph_target_is_created_then_found(zep: ZepFake) -> None:
    provider = make(zep, user_id="", graph_id="team-notes")
    ref = provider.put(item("graph memory about kafka"), Deadline.after(5))
    assert zep.state.requests("POST", r"/graphs$")[0].body == {"name": "team-notes"}
    again = make(zep, user_id="", graph_id="team-notes")
    hits = again.search(SearchQuery(text="kafka"), Deadline.after(5))
    assert [h.id for h in hits] == [ref.id]
    assert len(zep.state.requests("POST", r"/graphs$")) == 1


def test_put_batch_adds_one_episode_per_item_and_retries_are_idempotent(zep: ZepFake) -> None:
    provider = make(zep)
    items = [item(f"note number {i}", id=f"ep_{i}") for i in range(3)]
    refs = provider.put_batch(items, Deadline.after(5))
    assert len({r.id for r in refs}) == 3
    again = provider.put_batch(items, Deadline.after(5))
    assert again == refs  # same ids: Zep honoured the idempotency keys
    graph = next(iter(zep.state.episodes.values()))
    assert len(graph) == 3


def test_metadata_is_capped_at_ten_keys_with_canonical_keys_first() -> None:
    meta = episode_metadata(
        item(
            "t",
            id="x",
            source="hook:episode",
            tier="stm",
            expires_at=datetime(2026, 1, 2, tzinfo=UTC),
            origin=MemoryOrigin("u", "a", "s", "t"),
            scope=MemoryScope("team", "core"),
            metadata={"sequence": "3", "zzz": "1", "aaa": "2"},
        )
    )
    assert list(meta) == [
        "paxm_id",
        "paxm_tier",
        "paxm_expires_at",
        "sequence",
        "paxm_user_id",
        "paxm_agent_id",
        "paxm_session_id",
        "paxm_turn_id",
        "paxm_scope_type",
        "paxm_scope_id",
    ]
    assert meta["paxm_tier"] == "stm" and meta["paxm_expires_at"] == "2026-01-02T00:00:00Z"


@pytest.mark.parametrize(
    ("relevance", "score", "expected"),
    [
        (0.8, 0.3, (0.8, 0.3, "zep_relevance")),
        (1.7, None, (1.0, 1.7, "zep_relevance")),
        (None, 0.42, (0.42, 0.42, "zep_score")),
        (None, 3.0, (0.25, 3.0, "zep_rank_score")),
        (None, -2.0, (0.0, -2.0, "zep_score")),
        (None, None, (1.0, None, "zep_unscored")),
        (float("nan"), None, (1.0, None, "zep_unscored")),
    ],
)
def test_relevance_is_normalized_higher_is_better(
    relevance: float | None, score: float | None, expected: tuple[float, float | None, str]
) -> None:
    assert normalize_relevance(relevance, score) == expected


def test_other_scopes_map_to_hits(zep: ZepFake) -> None:
    provider = make(zep)
    provider.put(item("postgres runs on port 5432"), Deadline.after(5))
    edges = make(zep, search_scope="edges").search(SearchQuery(text="postgres", limit=80), Deadline.after(5))
    assert zep.state.log[-1].query == {"page_size": ["50"]}  # clamped to Zep's maximum
    assert edges[0].text == "postgres runs on port 5432" and edges[0].source == "zep:edge"
    assert edges[0].relevance == pytest.approx(1 / 3) and edges[0].raw_score_kind == "zep_rank_score"
    assert edges[0].metadata["zep_edge_name"] == "RELATES_TO"
    context = make(zep, search_scope="auto", max_characters=12).search(SearchQuery(text="postgres"), Deadline.after(5))
    assert zep.state.log[-1].body == {"query": "postgres", "max_characters": 12}
    assert [(h.id, h.text, h.relevance) for h in context] == [("context", "- postgres r", 1.0)]


def test_bad_api_key_fails_fast_with_a_clear_error_and_no_secret(zep: ZepFake) -> None:
    provider = make(zep, api_key="z_wrong_secret")
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        provider.search(SearchQuery(text="x"), Deadline.after(10))
    assert time.monotonic() - started < 1.0
    message = str(info.value)
    assert "authentication failed (HTTP 401)" in message and "api_key" in message
    assert "z_wrong_secret" not in message
    assert info.value.provider == "zep_main" and info.value.op == "ensure user"
    assert len(zep.state.log) == 1  # no retries on 401


def test_secrets_echoed_by_the_server_are_redacted(zep: ZepFake) -> None:
    zep.state.faults.append(Fault("POST", r"/users/lookup$", status=403, body={"message": "key z_test_key revoked"}))
    with pytest.raises(ProviderError) as info:
        make(zep).health(Deadline.after(5))
    assert "z_test_key" not in str(info.value) and "<redacted>" in str(info.value)


def test_rate_limit_and_server_errors_are_retried_within_the_deadline(zep: ZepFake) -> None:
    provider = make(zep)
    provider.health(Deadline.after(5))
    zep.state.faults.append(Fault("POST", r"/search/episodes$", status=429, times=1))
    assert provider.search(SearchQuery(text="x"), Deadline.after(5)) == []  # recovered on retry
    zep.state.faults.append(Fault("POST", r"/search/episodes$", status=503))
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"search: Zep server error \(HTTP 503\)"):
        provider.search(SearchQuery(text="x"), Deadline.after(5))
    assert time.monotonic() - started < 2.0
    zep.state.faults[-1].status = 429
    with pytest.raises(ProviderError, match="rate limited"):
        provider.search(SearchQuery(text="x"), Deadline.after(0.3))


def test_missing_graph_is_reported_as_not_found(zep: ZepFake) -> None:
    provider = make(zep)
    provider.health(Deadline.after(5))
    zep.state.graphs.clear()
    with pytest.raises(ProviderError, match=r"search: not found \(HTTP 404\)"):
        provider.search(SearchQuery(text="x"), Deadline.after(5))


def test_a_hanging_server_never_holds_a_call_past_its_deadline(zep: ZepFake) -> None:
    provider = make(zep)
    provider.health(Deadline.after(5))
    zep.state.faults.append(Fault("POST", r"/search/episodes$", status=200, hang=3.0))
    started = time.monotonic()
    with pytest.raises(ProviderError, match="deadline exceeded|timed out"):
        provider.search(SearchQuery(text="x"), Deadline.after(0.4))
    assert time.monotonic() - started < 1.2


def test_cancelled_or_expired_deadline_fails_before_any_request(zep: ZepFake) -> None:
    provider = make(zep)
    for call in (
        lambda d: provider.health(d),
        lambda d: provider.put(item("x"), d),
        lambda d: provider.search(SearchQuery(text="x"), d),
    ):
        with pytest.raises(DeadlineExceeded):
            call(Deadline.cancelled_now())
    assert zep.state.log == []


def test_delete_and_eval_scope_cleanup(zep: ZepFake) -> None:
    provider = make(zep)
    ref = provider.put(item("temporary note about redis"), Deadline.after(5))
    provider.delete(ref, Deadline.after(5))
    assert provider.search(SearchQuery(text="redis"), Deadline.after(5)) == []
    with pytest.raises(ProviderError, match="belongs to provider"):
        provider.delete(MemoryRef("other", ref.id), Deadline.after(5))
    with pytest.raises(ProviderError, match="paxm-eval"):
        provider.cleanup_eval_scope(Deadline.after(5))
    evals = make(zep, user_id="", graph_id="paxm-eval-run1")
    evals.put(item("eval memory"), Deadline.after(5))
    evals.cleanup_eval_scope(Deadline.after(5))
    assert not any(g["name"] == "paxm-eval-run1" for g in zep.state.graphs.values())


def test_close_makes_later_calls_fail_clearly(zep: ZepFake) -> None:
    provider = make(zep)
    provider.close()
    with pytest.raises(ProviderError, match="provider is closed"):
        provider.search(SearchQuery(text="x"), Deadline.after(5))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"api_key": ""}, "providers.zep_main.api_key: needs an API key"),
        ({"user_id": "", "graph_id": ""}, "set exactly one of user_id or graph_id"),
        ({"graph_id": "g"}, "set exactly one of user_id or graph_id"),
        ({"search_scope": "everything"}, "search_scope 'everything' is invalid"),
        ({"max_characters": -1}, "max_characters -1 is invalid"),
    ],
)
def test_bad_config_is_a_clear_config_error(
    zep: ZepFake, overrides: dict[str, object], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ZEP_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        make(zep, **overrides)


def test_api_key_from_an_environment_reference(zep: ZepFake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_ZEP_KEY", zep.state.api_key)
    make(zep, api_key="env:MY_ZEP_KEY").health(Deadline.after(5))
    monkeypatch.setenv("ZEP_API_KEY", zep.state.api_key)
    make(zep, api_key="").health(Deadline.after(5))


def test_importing_the_plugin_does_not_import_the_sdk() -> None:
    code = "import sys, paxm_provider_zep; print(any(m.startswith('zep_cloud') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_expired_memories_carry_expiry_for_the_router(zep: ZepFake) -> None:
    provider = make(zep)
    past = datetime.now(UTC) - timedelta(hours=1)
    provider.put(item("short lived task state", tier="stm", expires_at=past), Deadline.after(5))
    [hit] = provider.search(SearchQuery(text="task state"), Deadline.after(5))
    assert hit.tier == "stm" and hit.expires_at is not None and hit.expires_at < datetime.now(UTC)
    assert json.dumps(hit.to_json())  # serializable


@pytest.mark.parametrize(("limit", "ok"), [(0, True), (400, True), (-1, False), ("12", False), (True, False)])
def test_the_zep_type_validates_its_own_keys(limit: object, ok: bool) -> None:
    """``max_characters`` is Zep's key: the type checks it, not the core's config."""
    spec = get_plugin_manager().provider_type("zep")
    assert spec.validate is not None
    problems = spec.validate(ProviderConfig.of(type="zep", max_characters=limit, search_scope="edges"))
    assert (problems == []) is ok, problems
    assert spec.validate(ProviderConfig.of(type="zep", search_scope="everything")) != []
