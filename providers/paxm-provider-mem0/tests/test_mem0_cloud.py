"""The ``mem0-cloud`` provider against the recording Mem0 Cloud server: exact wire, async writes,
errors, and a cross-check against the official ``mem0.MemoryClient`` (run in the mem0 venv)."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from collections.abc import Iterator

import pytest
from mem0_cloud_fake import Mem0CloudFake, Request
from mem0_fixtures import ATTRIBUTION_METADATA, CREATED, ORIGIN, SCOPE
from mem0_venv import mem0_python

from paxm_contracttest.fakes import closed_after_test
from paxm_core import Deadline, ProviderConfig
from paxm_core.api.errors import ConfigError, ProviderError
from paxm_core.api.types import MemoryItem, MemoryRef, SearchQuery
from paxm_provider_mem0.cloud import Mem0CloudProvider


def provider(cloud: Mem0CloudFake, **changes: object) -> Mem0CloudProvider:
    keys: dict[str, object] = {"base_url": cloud.base_url, "api_key": cloud.state.api_key, "user_id": "todd"}
    config = ProviderConfig.of(type="mem0-cloud", enabled=True, **(keys | changes))
    return closed_after_test(Mem0CloudProvider("mem0_cloud", config))


def soon() -> Deadline:
    return Deadline.after(20)


def wire(requests: Iterator[Request]) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in requests]


def test_a_write_is_added_polled_until_done_then_looked_up_by_its_write_id(cloud: Mem0CloudFake) -> None:
    cloud.state.pending_polls = 2
    cloud.state.list_lag = 1
    p = provider(cloud)
    item = MemoryItem(
        text="Deploys freeze on Fridays",
        id="item-7",
        source="codex",
        created_at=CREATED,
        metadata={"workspace": "/repo"},
        origin=ORIGIN,
        scope=SCOPE,
    )
    started = time.monotonic()
    ref = p.put(item, soon())
    took = time.monotonic() - started
    requests = list(cloud.requests())
    add = requests[0]
    event_id = cloud.state.events and next(iter(cloud.state.events))
    assert wire(iter(requests)) == [
        ("POST", "/v3/memories/add/"),
        ("GET", f"/v1/event/{event_id}/"),
        ("GET", f"/v1/event/{event_id}/"),
        ("GET", f"/v1/event/{event_id}/"),
        ("POST", "/v3/memories/"),
        ("POST", "/v3/memories/"),
    ]
    assert all(r.authorization == f"Token {cloud.state.api_key}" for r in requests)
    write_id = add.body["metadata"]["paxm_write_id"]
    assert len(write_id) == 32 and int(write_id, 16) >= 0
    assert add.body == {
        "messages": [{"role": "user", "content": "Deploys freeze on Fridays"}],
        "user_id": "todd",
        "metadata": {
            "workspace": "/repo",
            "paxm_id": "item-7",
            "paxm_source": "codex",
            "paxm_tier": "ltm",
            **ATTRIBUTION_METADATA,
            "paxm_write_id": write_id,
        },
        "infer": False,
    }
    lookup = requests[-1]
    assert lookup.query == {"page": "1", "page_size": "100"}
    assert lookup.body == {"filters": {"user_id": "todd", "metadata": {"paxm_write_id": write_id}}}
    stored = next(iter(cloud.state.memories.values()))
    assert ref.id == stored["id"] and ref.provider == "mem0_cloud"
    assert took >= 0.5  # two 250 ms polls really waited; the lagging list was retried after 100 ms


def test_search_wire_and_hit_mapping(cloud: Mem0CloudFake) -> None:
    p = provider(cloud, agent_id="codex-todd")
    cloud.state.pending_polls = 0
    cloud.state.list_lag = 0
    ref = p.put(MemoryItem(text="The build cache lives in /var/cache/build", tier="stm"), soon())
    cloud.clear()
    hits = p.search(SearchQuery(text="where is the build cache", limit=3, tiers=("stm",), filters={"k": "v"}), soon())
    [request] = cloud.requests()
    assert (request.method, request.path) == ("POST", "/v3/memories/search/")
    assert request.body == {
        "query": "where is the build cache",
        "filters": {"user_id": "todd", "agent_id": "codex-todd", "metadata": {"k": "v", "paxm_tier": "stm"}},
        "top_k": 3,
    }
    assert hits == []  # the explicit filter k=v excludes it
    [hit] = p.search(SearchQuery(text="where is the build cache", limit=3, tiers=("stm",)), soon())
    assert hit.id == ref.id and hit.text == "The build cache lives in /var/cache/build" and hit.tier == "stm"
    assert hit.raw_score_kind == "mem0_cloud_similarity" and 0 < hit.relevance <= 1 and hit.source == "mem0-cloud"
    assert hit.metadata["mem0_agent_id"] == "codex-todd"


def test_delete_and_eval_cleanup_wire(cloud: Mem0CloudFake) -> None:
    cloud.state.pending_polls = 0
    cloud.state.list_lag = 0
    run = provider(cloud, run_id="paxm-eval-r9")
    ref = run.put(MemoryItem(text="cleanup target"), soon())
    cloud.clear()
    run.delete(ref, soon())
    with pytest.raises(ProviderError, match=r"not found \(HTTP 404, DELETE /v1/memories/"):
        run.delete(ref, soon())
    run.put(MemoryItem(text="another"), soon())
    cloud.clear()
    run.cleanup_eval_scope(soon())
    [request] = cloud.requests()
    assert (request.method, request.path, request.query) == (
        "DELETE",
        "/v1/memories/",
        {"user_id": "todd", "run_id": "paxm-eval-r9"},
    )
    assert cloud.state.memories == {}
    with pytest.raises(ProviderError, match="paxm-eval-"):
        provider(cloud, run_id="prod").cleanup_eval_scope(soon())


def test_health_and_setup_check_list_one_memory(cloud: Mem0CloudFake) -> None:
    p = provider(cloud)
    p.health(soon())
    assert p.ensure_target(soon()) == ("user_id=todd", "exists")
    for request in cloud.requests():
        assert (request.method, request.path, request.query) == (
            "POST",
            "/v3/memories/",
            {"page": "1", "page_size": "1"},
        )
        assert request.body == {"filters": {"user_id": "todd"}}


def test_a_failed_event_is_a_clear_error(cloud: Mem0CloudFake) -> None:
    cloud.state.pending_polls = 0
    cloud.state.fail_event = True
    with pytest.raises(ProviderError, match="Mem0 Cloud could not store the memory: memory extraction failed"):
        provider(cloud).put(MemoryItem(text="x"), soon())


def test_polling_never_outlives_the_deadline(cloud: Mem0CloudFake) -> None:
    cloud.state.pending_polls = 10_000
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        provider(cloud).put(MemoryItem(text="slow"), Deadline.after(0.8))
    assert time.monotonic() - started < 1.5
    assert "deadline exceeded while waiting for Mem0 Cloud event" in str(caught.value) and caught.value.retryable


def test_a_write_that_never_shows_up_in_the_list_fails_retryably(cloud: Mem0CloudFake) -> None:
    cloud.state.pending_polls = 0
    cloud.state.list_lag = 1_000
    with pytest.raises(ProviderError, match="memory was not found") as caught:
        provider(cloud).put(MemoryItem(text="lost"), soon())
    assert caught.value.retryable
    assert len([r for r in cloud.requests() if r.path == "/v3/memories/"]) == 6


def test_a_wrong_key_is_401_everywhere_and_never_shown(cloud: Mem0CloudFake) -> None:
    secret = "m0-wrong-" + "z" * 24
    p = provider(cloud, api_key=secret)
    for op, call in {
        "health": lambda: p.health(soon()),
        "setup check": lambda: p.ensure_target(soon()),
        "put": lambda: p.put(MemoryItem(text="x"), soon()),
        "search": lambda: p.search(SearchQuery(text="x"), soon()),
        "delete": lambda: p.delete(MemoryRef("mem0_cloud", "m1"), soon()),
    }.items():
        with pytest.raises(ProviderError) as caught:
            call()
        message = str(caught.value)
        assert (
            caught.value.op == op and "authentication failed (HTTP 401" in message and "mem0-cloud api_key" in message
        )
        assert secret not in message
    assert secret not in repr(p) and secret not in repr(p._settings)
    assert all(r.authorization == f"Token {secret}" for r in cloud.requests())


@pytest.mark.parametrize(("status", "retryable"), [(429, True), (500, True), (502, True), (400, False), (403, False)])
def test_status_errors_on_add_name_the_operation(cloud: Mem0CloudFake, status: int, retryable: bool) -> None:
    cloud.fail_next("/v3/memories/add/", status, {"detail": f"nope {cloud.state.api_key}"})
    with pytest.raises(ProviderError) as caught:
        provider(cloud).put(MemoryItem(text="x"), soon())
    assert caught.value.op == "put" and f"HTTP {status}, POST /v3/memories/add/" in str(caught.value)
    assert caught.value.retryable is retryable and cloud.state.api_key not in str(caught.value)
    assert not cloud.state.events  # nothing was queued


def test_rate_limited_search(cloud: Mem0CloudFake) -> None:
    cloud.fail_next("/v3/memories/search/", 429, {"detail": "Request was throttled."})
    with pytest.raises(ProviderError, match=r"rate limited by Mem0 Cloud \(HTTP 429.*Request was throttled") as caught:
        provider(cloud).search(SearchQuery(text="x"), soon())
    assert caught.value.retryable


def test_the_key_comes_from_config_an_env_reference_or_mem0_api_key(
    cloud: Mem0CloudFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="Mem0 Cloud needs an API key"):
        provider(cloud, api_key="")
    monkeypatch.setenv("TEAM_MEM0_KEY", cloud.state.api_key)
    provider(cloud, api_key="env:TEAM_MEM0_KEY").health(soon())
    with pytest.raises(ConfigError, match="Mem0 Cloud needs an API key"):
        provider(cloud, api_key="env:UNSET_MEM0_VARIABLE")  # a named but empty variable is not silently replaced
    monkeypatch.setenv("MEM0_API_KEY", cloud.state.api_key)
    provider(cloud, api_key="").health(soon())


def test_the_defaults_are_upstreams(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_API_KEY", "m0-x")
    p = Mem0CloudProvider("c", ProviderConfig(type="mem0-cloud", user_id="todd"))
    closed_after_test(p)
    assert p._settings.base_url == "https://api.mem0.ai" and p._settings.timeout == 120.0
    assert p._settings.infer is False and p._settings.score_semantics == "similarity"


# -- the official client agrees on the wire ---------------------------------------------------

_CLIENT_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from mem0 import MemoryClient
    base, key, write_id, memory_id = sys.argv[1:5]
    client = MemoryClient(api_key=key, host=base)
    client.add([{"role": "user", "content": "wire check"}], user_id="todd", metadata={"paxm_write_id": write_id},
               infer=False)
    client.get_all(filters={"user_id": "todd", "metadata": {"paxm_write_id": write_id}}, page=1, page_size=100)
    client.search("wire check", filters={"user_id": "todd", "metadata": {"paxm_tier": "ltm"}}, top_k=3)
    try:
        client.delete(memory_id)
    except Exception as exc:  # the fake already forgot it: MemoryNotFoundError, wire recorded anyway
        print(type(exc).__name__, file=sys.stderr)
    client.delete_all(user_id="todd", run_id="paxm-eval-x")
    """
)


def test_the_official_memory_client_sends_the_same_wire(cloud: Mem0CloudFake, tmp_path: object) -> None:
    python = mem0_python()
    cloud.state.pending_polls = 0
    cloud.state.list_lag = 0
    ours = provider(cloud, run_id="paxm-eval-x")
    ref = ours.put(MemoryItem(text="wire check"), soon())
    ours.search(SearchQuery(text="wire check", limit=3, tiers=("ltm",)), soon())
    ours.delete(ref, soon())
    ours.cleanup_eval_scope(soon())
    mine = [r for r in cloud.requests() if not r.path.startswith("/v1/event/")]
    write_id = mine[0].body["metadata"]["paxm_write_id"]
    cloud.clear()
    # the memory is gone by now; the official client's delete of the same id just gets a 404 body
    run = subprocess.run(
        [str(python), "-c", _CLIENT_SCRIPT, cloud.base_url, cloud.state.api_key, write_id, ref.id],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "MEM0_TELEMETRY": "false"},
    )
    theirs = [r for r in cloud.requests() if r.path != "/v1/ping/"]
    assert [(r.method, r.path) for r in theirs] == [(r.method, r.path) for r in mine], run.stderr[-2000:]
    assert any(r.path == "/v1/ping/" for r in cloud.requests())  # the client validates its key first
    for their, our in zip(theirs, mine, strict=True):
        assert their.authorization == our.authorization == f"Token {cloud.state.api_key}"
        assert their.query == our.query, (our.path, their.query, our.query)
        if our.path == "/v3/memories/add/":
            # ours carries paxm's metadata keys too; every field the client sends means the same
            assert their.body["messages"] == our.body["messages"] and their.body["user_id"] == "todd"
            assert their.body["infer"] is False and our.body["infer"] is False
            assert set(our.body) <= set(their.body) | {"run_id"}
        elif our.body is not None:
            for key, value in our.body.items():
                if key == "filters":
                    assert their.body["filters"]["user_id"] == value["user_id"]
                    assert their.body["filters"].get("metadata") == value.get("metadata")
                else:
                    assert their.body[key] == value, (our.path, key)
    assert json.loads(json.dumps(theirs[0].body))  # sanity: JSON bodies were recorded
