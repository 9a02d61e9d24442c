"""The ``mem0`` provider against the real Mem0 engine (mem0ai 2.2.1) behind our REST shim.

Wire shape, ranking, tiers/expiry, attribution, scope-payload fallback, eval cleanup and the
error paths; the shim records every request so the exact bodies and headers are asserted.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from mem0_fixtures import ATTRIBUTION_METADATA, CREATED, ORIGIN, SCOPE, Mem0Server

from paxm_contracttest.fakes import closed_after_test
from paxm_core import Deadline, ProviderConfig
from paxm_core.api.errors import ConfigError, DeadlineExceeded, ProviderError
from paxm_core.api.types import MemoryItem, MemoryRef, SearchQuery
from paxm_provider_mem0.selfhosted import Mem0Provider


def provider(server: Mem0Server, **changes: object) -> Mem0Provider:
    keys: dict[str, object] = {"base_url": server.base_url, "api_key": server.api_key, "user_id": server.fresh_user()}
    return closed_after_test(Mem0Provider("mem0", ProviderConfig.of(type="mem0", enabled=True, **(keys | changes))))


def soon() -> Deadline:
    return Deadline.after(20)


def test_put_sends_verbatim_text_paxm_metadata_and_infer_false(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    created = CREATED
    mark = mem0_server.mark()
    item = MemoryItem(
        text="  The release train leaves on Thursdays  ",
        id="paxm-item-1",
        source="cli",
        metadata={"workspace": "/repo", "user_id": "must-not-leak"},
        created_at=created,
        tier="stm",
        expires_at=created + timedelta(hours=24),
        origin=ORIGIN,
        scope=SCOPE,
    )
    ref = p.put(item, soon())
    assert ref.provider == "mem0" and ref.id
    [request] = mem0_server.since(mark)
    assert (request["method"], request["path"]) == ("POST", "/memories")
    assert request["x_api_key"] == mem0_server.api_key and request["authorization"] is None
    assert request["content_type"] == "application/json"
    user = p._target["user_id"]
    assert request["body"] == {
        "messages": [{"role": "user", "content": "The release train leaves on Thursdays"}],
        "user_id": user,
        "metadata": {
            "workspace": "/repo",
            "paxm_id": "paxm-item-1",
            "paxm_source": "cli",
            "paxm_tier": "stm",
            "paxm_expires_at": "2026-12-01T09:00:00Z",
            **ATTRIBUTION_METADATA,
        },
        "infer": False,
    }
    [hit] = p.search(SearchQuery(text="release train Thursdays", limit=5), soon())
    assert hit.id == ref.id and hit.text == "The release train leaves on Thursdays"
    assert hit.tier == "stm" and hit.expires_at == created + timedelta(hours=24)
    assert hit.origin == item.origin and hit.scope == item.scope
    assert hit.metadata["mem0_user_id"] == user and hit.metadata["workspace"] == "/repo"
    assert hit.created_at is not None and hit.source == "mem0"


def test_recall_ranks_the_matching_memory_first(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    facts = {
        "coffee": "I prefer dark roast coffee in the morning",
        "deploy": "Production deploys need two approvals from the platform team",
        "cat": "My cat is called Miso and sleeps on the keyboard",
        "tests": "Run the integration tests with pytest before every merge",
        "city": "Our office moved to Lisbon last spring",
    }
    refs = {key: p.put(MemoryItem(text=text), soon()).id for key, text in facts.items()}
    cases = {
        "coffee": "which coffee roast do I prefer",
        "deploy": "how many approvals do production deploys need",
        "cat": "what is my cat called",
        "tests": "which tests run before every merge",
        "city": "which city is our office in",
    }
    for key, question in cases.items():
        hits = p.search(SearchQuery(text=question, limit=3), soon())
        assert hits and hits[0].id == refs[key], (question, [(h.text, h.relevance) for h in hits])
        assert hits[0].raw_score_kind == "mem0_similarity" and hits[0].raw_score is not None
        assert all(0.0 <= h.relevance <= 1.0 for h in hits)
        assert [h.relevance for h in hits] == sorted((h.relevance for h in hits), reverse=True)


def test_a_single_tier_is_a_server_side_filter(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    stm = p.put(MemoryItem(text="tier probe kiwi short lived", tier="stm"), soon())
    ltm = p.put(MemoryItem(text="tier probe kiwi long lived", tier="ltm"), soon())
    mark = mem0_server.mark()
    assert [h.id for h in p.search(SearchQuery(text="tier probe kiwi", tiers=("stm",)), soon())] == [stm.id]
    assert [h.id for h in p.search(SearchQuery(text="tier probe kiwi", tiers=("ltm",)), soon())] == [ltm.id]
    both = p.search(SearchQuery(text="tier probe kiwi", tiers=("stm", "ltm"), filters={"paxm_source": ""}), soon())
    assert {h.id for h in both} == {stm.id, ltm.id}
    bodies = [r["body"] for r in mem0_server.since(mark)]
    assert bodies[0]["filters"] == {"paxm_tier": "stm", "user_id": p._target["user_id"]}
    assert bodies[2]["filters"] == {"user_id": p._target["user_id"]}  # no tier filter, empty filter dropped


def test_runtime_metadata_never_becomes_a_filter_but_explicit_filters_do(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    ref = p.put(MemoryItem(text="filter probe walnut", metadata={"project": "alpha"}), soon())
    mark = mem0_server.mark()
    found = p.search(SearchQuery(text="filter probe walnut", metadata={"project": "beta"}), soon())
    assert [h.id for h in found] == [ref.id]
    assert p.search(SearchQuery(text="filter probe walnut", filters={"project": "beta"}), soon()) == []
    assert [h.id for h in p.search(SearchQuery(text="walnut", filters={"project": "alpha"}), soon())] == [ref.id]
    first, second, _ = (r["body"] for r in mem0_server.since(mark))
    assert "project" not in first["filters"] and second["filters"]["project"] == "beta"


def test_other_users_memories_are_invisible(mem0_server: Mem0Server) -> None:
    alice, bob = provider(mem0_server), provider(mem0_server)
    alice.put(MemoryItem(text="isolation probe mango secret"), soon())
    assert bob.search(SearchQuery(text="isolation probe mango secret"), soon()) == []


def test_agent_and_run_targets_scope_writes_and_searches(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server, user_id="", agent_id="agent-" + mem0_server.fresh_user(), run_id="run-1")
    mark = mem0_server.mark()
    ref = p.put(MemoryItem(text="agent scoped papaya note"), soon())
    hits = p.search(SearchQuery(text="papaya note"), soon())
    assert [h.id for h in hits] == [ref.id]
    put, search = mem0_server.since(mark)
    assert "user_id" not in put["body"] and put["body"]["agent_id"] == p._target["agent_id"]
    assert put["body"]["run_id"] == "run-1"
    assert search["body"]["filters"] == {"agent_id": p._target["agent_id"], "run_id": "run-1"}


def test_distance_semantics_turn_a_distance_into_higher_is_better(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server, score_semantics="distance")
    p.put(MemoryItem(text="distance probe lychee"), soon())
    [hit] = p.search(SearchQuery(text="distance probe lychee"), soon())
    assert hit.raw_score_kind == "mem0_distance" and hit.raw_score is not None
    assert hit.relevance == pytest.approx(1 - hit.raw_score / 2, abs=1e-6)


def test_bearer_keys_are_sent_verbatim_as_authorization(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server, api_key=f"Bearer {mem0_server.api_key}")
    mark = mem0_server.mark()
    p.put(MemoryItem(text="bearer probe fig"), soon())
    [request] = mem0_server.since(mark)
    assert request["authorization"] == f"Bearer {mem0_server.api_key}" and request["x_api_key"] is None


def test_env_references_resolve_the_key(mem0_server: Mem0Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_MEM0_KEY", mem0_server.api_key)
    p = provider(mem0_server, api_key="env:MY_MEM0_KEY")
    p.put(MemoryItem(text="env reference probe plum"), soon())
    monkeypatch.setenv("MEM0_API_KEY", "m0-cloud-key-must-not-be-used")
    blank = provider(mem0_server, api_key="")
    with pytest.raises(ProviderError, match="HTTP 401"):
        blank.put(MemoryItem(text="no key"), soon())  # a Cloud key is never sent to a self-hosted server


def test_auto_scope_payload_falls_back_to_top_level_once_for_old_servers(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    ref = p.put(MemoryItem(text="legacy probe quince"), soon())
    mem0_server.legacy_search(True)
    try:
        mark = mem0_server.mark()
        assert [h.id for h in p.search(SearchQuery(text="legacy probe quince"), soon())] == [ref.id]
        assert [h.id for h in p.search(SearchQuery(text="legacy probe quince", tiers=("ltm",)), soon())] == [ref.id]
        first, retry, cached = (r["body"] for r in mem0_server.since(mark))
        user = p._target["user_id"]
        assert first["filters"] == {"user_id": user} and "user_id" not in first
        assert retry["user_id"] == user and "filters" not in retry
        assert cached["user_id"] == user and cached["filters"] == {"paxm_tier": "ltm"}  # remembered: no retry
        strict = provider(mem0_server, user_id=user, search_scope_payload="filters")
        with pytest.raises(ProviderError, match="(?i)HTTP 400.*at least one of"):
            strict.search(SearchQuery(text="legacy probe quince"), soon())
    finally:
        mem0_server.legacy_search(False)


def test_the_fallback_is_not_taken_for_other_errors(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    mem0_server.fail_next("/search", 401, {"detail": "Invalid or missing API key"})
    mark = mem0_server.mark()
    with pytest.raises(ProviderError) as caught:
        p.search(SearchQuery(text="anything"), soon())
    assert "authentication failed (HTTP 401, POST /search)" in str(caught.value)
    assert len(mem0_server.since(mark)) == 1


@pytest.mark.parametrize(
    ("status", "expected", "retryable"),
    [
        (400, "Mem0 rejected the request (HTTP 400, POST /search): bad filter", False),
        (403, "authentication failed (HTTP 403, POST /search)", False),
        (404, "not found (HTTP 404, POST /search)", False),
        (429, "rate limited by Mem0 (HTTP 429, POST /search); retry later", True),
        (500, "Mem0 server error (HTTP 500, POST /search): bad filter", True),
        (503, "Mem0 server error (HTTP 503, POST /search)", True),
    ],
)
def test_errors_name_the_operation_and_status(
    mem0_server: Mem0Server, status: int, expected: str, retryable: bool
) -> None:
    p = provider(mem0_server)
    mem0_server.fail_next("/search", status, {"detail": f"bad filter {mem0_server.api_key}"})
    with pytest.raises(ProviderError) as caught:
        p.search(SearchQuery(text="error probe"), soon())
    error = caught.value
    assert error.op == "search" and error.provider == "mem0" and error.retryable is retryable
    assert str(error).startswith("mem0 search: ") and expected in str(error)
    assert mem0_server.api_key not in str(error) and mem0_server.api_key not in repr(error.args)
    assert "<redacted>" in str(error)  # a server echoing the key gets it scrubbed


def test_a_wrong_key_fails_every_operation_without_showing_the_key(mem0_server: Mem0Server) -> None:
    secret = "m0-wrong-" + "x" * 20
    p = provider(mem0_server, api_key=secret)
    checks = {
        "health": lambda: p.health(soon()),
        "setup check": lambda: p.ensure_target(soon()),
        "put": lambda: p.put(MemoryItem(text="x"), soon()),
        "search": lambda: p.search(SearchQuery(text="x"), soon()),
        "delete": lambda: p.delete(MemoryRef("mem0", "some-id"), soon()),
    }
    for op, call in checks.items():
        with pytest.raises(ProviderError) as caught:
            call()
        assert caught.value.op == op and "HTTP 401" in str(caught.value), str(caught.value)
        assert secret not in str(caught.value)
    assert secret not in repr(p) and secret not in repr(p._settings)


def test_ensure_target_proves_the_key_with_an_authenticated_list(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    mark = mem0_server.mark()
    assert p.ensure_target(soon()) == (f"user_id={p._target['user_id']}", "exists")
    [request] = mem0_server.since(mark)
    assert (request["method"], request["path"], request["query"]) == (
        "GET",
        "/memories",
        {"user_id": p._target["user_id"]},
    )


def test_health_is_one_cheap_authenticated_call(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    mark = mem0_server.mark()
    p.health(soon())
    [request] = mem0_server.since(mark)
    assert (request["method"], request["path"], request["query"]) == ("GET", "/memories", p._target)
    assert request["x_api_key"] == mem0_server.api_key
    with pytest.raises(ProviderError, match=r"mem0 health: authentication failed \(HTTP 401"):
        provider(mem0_server, api_key="m0-revoked").health(soon())  # a revoked key is not "healthy"


def test_delete_removes_the_memory_and_a_second_delete_is_404(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    ref = p.put(MemoryItem(text="delete probe guava"), soon())
    p.delete(ref, soon())
    assert p.search(SearchQuery(text="delete probe guava"), soon()) == []
    with pytest.raises(ProviderError, match=r"mem0 delete: not found \(HTTP 404, DELETE /memories/"):
        p.delete(ref, soon())
    with pytest.raises(ProviderError, match="belongs to provider 'other'"):
        p.delete(MemoryRef("other", ref.id), soon())


def test_eval_cleanup_only_for_a_paxm_eval_run(mem0_server: Mem0Server) -> None:
    user = mem0_server.fresh_user()
    plain = provider(mem0_server, user_id=user, run_id="daily")
    assert "eval_scope_cleanup" not in plain.capabilities()
    with pytest.raises(ProviderError, match="paxm-eval-"):
        plain.cleanup_eval_scope(soon())
    kept = plain.put(MemoryItem(text="cleanup probe apricot kept"), soon())
    run = provider(mem0_server, user_id=user, run_id="paxm-eval-r1")
    gone = run.put(MemoryItem(text="cleanup probe apricot gone"), soon())
    mark = mem0_server.mark()
    run.cleanup_eval_scope(soon())
    [request] = mem0_server.since(mark)
    assert (request["method"], request["path"], request["query"]) == (
        "DELETE",
        "/memories",
        {"user_id": user, "run_id": "paxm-eval-r1"},
    )
    assert run.search(SearchQuery(text="cleanup probe apricot"), soon()) == []
    assert [h.id for h in plain.search(SearchQuery(text="cleanup probe apricot"), soon())] == [kept.id]
    assert gone.id != kept.id


def test_infer_true_is_sent_and_an_llm_failure_is_a_clear_server_error(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server, infer=True)
    mark = mem0_server.mark()
    with pytest.raises(ProviderError) as caught:
        p.put(MemoryItem(text="I moved to Porto"), soon())
    assert mem0_server.since(mark)[0]["body"]["infer"] is True
    assert "Mem0 server error (HTTP 500, POST /memories)" in str(caught.value) and caught.value.retryable


def test_put_batch_returns_one_ref_per_item_in_order(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    refs = p.put_batch([MemoryItem(text=f"batch probe {w}") for w in ("one", "two", "three")], soon())
    assert len({r.id for r in refs}) == 3
    for ref, word in zip(refs, ("one", "two", "three"), strict=True):
        assert p.search(SearchQuery(text=f"batch probe {word}", limit=1), soon())[0].id == ref.id
    with pytest.raises(ProviderError, match="memory text is required"):
        p.put_batch([MemoryItem(text="ok"), MemoryItem(text="   ")], soon())


def test_close_then_calls_fail_clearly(mem0_server: Mem0Server) -> None:
    p = provider(mem0_server)
    p.close()
    p.close()
    with pytest.raises(ProviderError, match="provider is closed"):
        p.health(soon())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"user_id": ""}, "set the memory target: one or more of user_id, agent_id, run_id"),
        ({"base_url": "localhost:8888"}, "must be an absolute http(s) URL"),
        ({"score_semantics": "cosine"}, "score_semantics 'cosine' is invalid; use similarity or distance"),
        ({"search_scope_payload": "body"}, "search_scope_payload 'body' is invalid"),
    ],
)
def test_config_problems_are_clear(mem0_server: Mem0Server, changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        provider(mem0_server, **changes)
    assert message in str(caught.value) and str(caught.value).startswith("providers.mem0: ")


# -- deadlines: the client timeout comes from the deadline ------------------------------------


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_a_hung_server_costs_no_more_than_the_deadline(silent_server: str) -> None:
    p = Mem0Provider("mem0", ProviderConfig(type="mem0", base_url=silent_server, user_id="todd"))
    closed_after_test(p)
    started = time.monotonic()
    with pytest.raises((ProviderError, DeadlineExceeded)) as caught:
        p.search(SearchQuery(text="anything"), Deadline.after(0.4))
    assert time.monotonic() - started < 1.5
    assert "deadline exceeded" in str(caught.value) or "timed out" in str(caught.value)


def test_an_unreachable_server_is_named() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    p = Mem0Provider("mem0", ProviderConfig(type="mem0", base_url=f"http://127.0.0.1:{port}", user_id="todd"))
    closed_after_test(p)
    with pytest.raises(ProviderError, match=f"cannot reach Mem0 at http://127.0.0.1:{port}"):
        p.health(Deadline.after(5))
