"""Behaviour against the real MemOS product server: recall, restart durability, attribution, errors."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest import fakes
from paxm_contracttest.fakes import closed_after_test, json_server
from paxm_core import Deadline, ProviderConfig
from paxm_core.api.errors import ConfigError, ProviderError
from paxm_core.api.types import MemoryItem, MemoryRef, SearchQuery
from paxm_core.plugins import get_plugin_manager
from paxm_provider_memos.response import strip_role_prefix
from paxm_provider_memos.selfhosted import MemOSProvider

sys.path.insert(0, str(Path(__file__).parent))
from memos_server import MemOSServer  # noqa: E402

# a real server from a cached venv: minutes on a cold cache
pytestmark = pytest.mark.slow


def _provider(url: str, cube: str, **kw: Any) -> MemOSProvider:
    provider = MemOSProvider(
        "memos", ProviderConfig.of(type="memos", base_url=url, user_id="todd", mem_cube_id=cube, **kw)
    )
    return closed_after_test(provider)


def _d() -> Deadline:
    return Deadline.after(30)


def test_role_prefix_is_stripped_only_when_present() -> None:
    assert strip_role_prefix("user: [02:32 AM on 30 November, 2026]: hello\n") == "hello"
    assert strip_role_prefix("hello: [not] a prefix") == "hello: [not] a prefix"
    assert strip_role_prefix("plain\n") == "plain\n"


def test_recall_finds_the_right_memory(memos: MemOSServer) -> None:
    for hit in fakes.check_recall_ranks_each_fact_first(_provider(memos.url, "recall-cases")):
        assert hit.raw_score_kind == "memos_relativity" and 0.0 <= hit.relevance <= 1.0


def test_cubes_are_isolated(memos: MemOSServer) -> None:
    _provider(memos.url, "cube-a").put(MemoryItem(text="walrus isolation marker"), _d())
    assert _provider(memos.url, "cube-b").search(SearchQuery(text="walrus isolation marker", limit=5), _d()) == []


def test_attribution_tier_and_expiry_survive(memos: MemOSServer) -> None:
    fakes.check_attribution_survives(_provider(memos.url, "attribution"))


def test_restart_loses_nothing_acknowledged(memos: MemOSServer) -> None:
    fakes.check_restart_keeps_acknowledged(lambda: _provider(memos.url, "durability"), memos.restart)


def test_ensure_target_checks_the_server(memos: MemOSServer) -> None:
    assert _provider(memos.url, "setup").ensure_target(_d()) == ("todd/setup", "exists")
    with pytest.raises(ProviderError, match="cannot reach MemOS"):
        _provider("http://127.0.0.1:9", "setup").ensure_target(_d())


def test_bad_config_is_rejected() -> None:
    with pytest.raises(ConfigError, match="search_mode"):
        _provider("http://127.0.0.1:9", "x", search_mode="turbo")
    spec = get_plugin_manager().provider_type("memos")
    assert spec.validate is not None and spec.validate(ProviderConfig(type="memos", base_url="ftp://x")) != []
    assert spec.package == "paxm-provider-memos" and "api_key" in spec.secret_keys


@pytest.fixture
def recorder() -> Iterator[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """Answers like MemOS does when it refuses (HTTP 200, a failure inside the envelope); records requests."""
    answers: dict[str, Any] = {}
    seen: list[dict[str, Any]] = []

    def answer(method: str, path: str, headers: Mapping[str, str], body: Any) -> tuple[int, Any]:
        seen.append({"path": path, "auth": headers.get("Authorization"), "body": body})
        return 200, answers.get(path, {"code": 200, "data": []})

    with json_server(answer) as url:
        yield url, answers, seen


def test_envelope_failures_on_http_200_are_errors_and_hide_the_key(recorder: tuple[str, Any, Any]) -> None:
    url, answers, seen = recorder
    secret = "memos-secret-token-987"
    answers |= {
        "/product/delete_memory": {
            "code": 200,
            "message": f"Exactly one delete mode {secret}",
            "data": {"status": "failure"},
        },
        "/product/search": {"code": 500, "message": "search exploded", "data": None},
        "/health": {"code": 0, "data": {"status": "healthy"}},
    }
    provider = _provider(url, "x", api_key=secret)
    provider.health(_d())
    with pytest.raises(ProviderError, match="search exploded") as searched:
        provider.search(SearchQuery(text="q"), _d())
    with pytest.raises(ProviderError, match="reported failure") as deleted:
        provider.delete(MemoryRef("memos", "m1"), _d())
    assert secret not in str(searched.value) + str(deleted.value)
    sent = next(r for r in seen if r["path"] == "/product/delete_memory")
    # exactly one delete mode: the real server refuses memory_ids together with user_id
    assert sent["body"] == {"writable_cube_ids": ["x"], "memory_ids": ["m1"]}
    assert sent["auth"] == f"Bearer {secret}"


def test_eval_cube_cleanup_removes_everything_in_that_cube_only(memos: MemOSServer) -> None:
    keep = _provider(memos.url, "kept-cube")
    keep.put(MemoryItem(text="platypus cleanup survivor"), _d())
    scratch = _provider(memos.url, "paxm-eval-cleanup")
    texts = ["platypus cleanup victim orange sunrise", "platypus cleanup victim granite mountain"]
    refs = scratch.put_batch([MemoryItem(text=t) for t in texts], _d())
    for text, ref in zip(texts, refs, strict=True):
        assert ref.id in [h.id for h in scratch.search(SearchQuery(text=text, limit=10), _d())]
    scratch.cleanup_eval_scope(_d())
    for text in texts:
        assert scratch.search(SearchQuery(text=text, limit=10), _d()) == []
    assert [h.text for h in keep.search(SearchQuery(text="platypus cleanup survivor", limit=10), _d())] == [
        "platypus cleanup survivor"
    ]
    with pytest.raises(ProviderError, match="paxm-eval-"):
        keep.cleanup_eval_scope(_d())
