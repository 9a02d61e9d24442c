"""Behaviour against the real openviking-server: recall, restart durability, attribution, errors."""

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
from paxm_provider_openviking.provider import OpenVikingProvider, decode_tags, encode_tag

sys.path.insert(0, str(Path(__file__).parent))
from ov_server import OpenVikingServer  # noqa: E402

# a real server from a cached venv: minutes on a cold cache
pytestmark = pytest.mark.slow


def _provider(url: str, **extra: Any) -> OpenVikingProvider:
    provider = OpenVikingProvider("ov", ProviderConfig(type="openviking", base_url=url, extra=extra))
    return closed_after_test(provider)


def _d() -> Deadline:
    return Deadline.after(30)


def test_tag_round_trips_any_string_map() -> None:
    meta = {"paxm_user_id": "Todd Ä", "k=v": "a=b,c\nd", "quote": '"\\', "empty": ""}
    tag = encode_tag(meta)
    assert tag == tag.lower() and tag.count("=") == 1  # survives OpenViking's k=v normalization
    assert decode_tags(["other=x", tag]) == meta
    assert decode_tags(["paxm_meta=zz"]) == {} and decode_tags(None) == {}


def test_recall_finds_the_right_memory(openviking: OpenVikingServer) -> None:
    for hit in fakes.check_recall_ranks_each_fact_first(_provider(openviking.url, memory_dir="recall-cases")):
        assert hit.raw_score_kind == "openviking_score" and hit.raw_score is not None


def test_attribution_tier_and_expiry_survive(openviking: OpenVikingServer) -> None:
    # case kept despite OpenViking's lower-cased tags
    ref, hit = fakes.check_attribution_survives(_provider(openviking.url, memory_dir="attribution"))
    assert hit.metadata["openviking_uri"] == ref.id


def test_restart_loses_nothing_acknowledged(openviking: OpenVikingServer) -> None:
    fakes.check_restart_keeps_acknowledged(
        lambda: _provider(openviking.url, memory_dir="durability"), openviking.restart
    )


def test_ensure_target_creates_then_finds_the_directory(openviking: OpenVikingServer) -> None:
    provider = _provider(openviking.url, memory_dir="setup-check")
    assert provider.ensure_target(_d()) == ("viking://user/default/memories/setup-check", "created")
    assert provider.ensure_target(_d())[1] == "exists"


def test_delete_refuses_foreign_uris(openviking: OpenVikingServer) -> None:
    provider = _provider(openviking.url)
    with pytest.raises(ProviderError, match="not a memory paxm wrote"):
        provider.delete(MemoryRef("ov", "viking://user/default/memories/other/x.md"), _d())
    with pytest.raises(ProviderError, match="belongs to provider"):
        provider.delete(MemoryRef("elsewhere", provider._root + "/x.md"), _d())


def test_unreachable_server_is_a_clear_error() -> None:
    provider = _provider("http://127.0.0.1:9")
    with pytest.raises(ProviderError, match="cannot reach OpenViking"):
        provider.health(_d())


def test_bad_config_is_rejected() -> None:
    with pytest.raises(ConfigError, match="memory_dir"):
        _provider("http://127.0.0.1:9", memory_dir="../escape")
    spec = get_plugin_manager().provider_type("openviking")
    assert spec.validate is not None
    assert spec.validate(ProviderConfig(type="openviking", base_url="ftp://x")) != []
    assert spec.validate(ProviderConfig(type="openviking", base_url="http://x")) == []
    assert spec.package == "paxm-provider-openviking" and "api_key" in spec.secret_keys
    assert all(k.ask for k in spec.config_keys if k.name in ("base_url", "api_key"))


@pytest.fixture
def http200_error_server() -> Iterator[str]:
    """Answers like OpenViking does for some failures: HTTP 200 with status "error"; echoes the key."""

    def answer(method: str, path: str, headers: Mapping[str, str], body: Any) -> tuple[int, Any]:
        message = f"bad key {headers.get('X-API-Key', '')}"
        return 200, {"status": "error", "error": {"code": "UNAUTHENTICATED", "message": message}}

    with json_server(answer) as url:
        yield url


def test_http_200_with_status_error_is_an_error_and_hides_the_key(http200_error_server: str) -> None:
    secret = "ov-secret-key-123456"
    provider = OpenVikingProvider(
        "ov", ProviderConfig(type="openviking", base_url=http200_error_server, api_key=secret)
    )
    closed_after_test(provider)
    for call in (
        lambda: provider.health(_d()),
        lambda: provider.search(SearchQuery(text="x"), _d()),
        lambda: provider.put(MemoryItem(text="x"), _d()),
    ):
        with pytest.raises(ProviderError) as info:
            call()
        assert "UNAUTHENTICATED" in str(info.value) and secret not in str(info.value)
        assert "<redacted>" in str(info.value)


def test_eval_dir_cleanup_removes_that_directory_only(openviking: OpenVikingServer) -> None:
    keep = _provider(openviking.url, memory_dir="kept-dir")
    kept = keep.put(MemoryItem(text="platypus cleanup survivor"), _d())
    scratch = _provider(openviking.url, memory_dir="paxm-eval-cleanup")
    refs = scratch.put_batch([MemoryItem(text=f"platypus cleanup victim {n}") for n in ("one", "two")], _d())
    scratch.cleanup_eval_scope(_d())
    ids = [h.id for h in keep.search(SearchQuery(text="platypus cleanup victim survivor", limit=20), _d())]
    assert kept.id in ids and not set(r.id for r in refs) & set(ids)
    with pytest.raises(ProviderError, match="paxm-eval-"):
        keep.cleanup_eval_scope(_d())
