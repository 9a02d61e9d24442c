"""Keys against a real openviking-server running with a root key: user keys work, others fail clearly."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from paxm_contracttest.fakes import closed_after_test
from paxm_core import Deadline, MemoryItem, MemoryOrigin, MemoryScope, ProviderConfig, ProviderError, SearchQuery
from paxm_provider_openviking.provider import OpenVikingProvider

sys.path.insert(0, str(Path(__file__).parent))
from ov_server import ROOT_KEY, OpenVikingServer  # noqa: E402

# a real server from a cached venv: minutes on a cold cache
pytestmark = pytest.mark.slow


def _provider(url: str, key: str = "", user: str = "todd") -> OpenVikingProvider:
    provider = OpenVikingProvider("ov", ProviderConfig(type="openviking", base_url=url, api_key=key, user_id=user))
    return closed_after_test(provider)


def _d() -> Deadline:
    return Deadline.after(30)


@pytest.fixture(scope="module")
def user_key(openviking_keyed: OpenVikingServer) -> str:
    """A user key minted through the admin API with the root key (the documented flow)."""
    resp = httpx.post(
        openviking_keyed.url + "/api/v1/admin/accounts",
        json={"account_id": "paxm", "admin_user_id": "todd"},
        headers={"X-API-Key": ROOT_KEY},
        timeout=30,
        trust_env=False,
    )
    resp.raise_for_status()
    key = resp.json()["result"]["user_key"]
    assert isinstance(key, str) and key
    return key


def test_user_key_can_write_and_recall(openviking_keyed: OpenVikingServer, user_key: str) -> None:
    provider = _provider(openviking_keyed.url, user_key)
    assert provider.ensure_target(_d())[0] == "viking://user/todd/memories/paxm"
    provider.health(_d())
    item = MemoryItem(
        text="keyed server marker ocelot", origin=MemoryOrigin("todd", "a", "s", "t"), scope=MemoryScope("user", "todd")
    )
    ref = provider.put(item, _d())
    hits = provider.search(SearchQuery(text="keyed server marker ocelot", limit=5), _d())
    assert hits and hits[0].id == ref.id and hits[0].scope == item.scope


@pytest.mark.parametrize("key", ["", ROOT_KEY, "ov-wrong-key-31337"])
def test_missing_wrong_or_root_key_is_a_clear_error(openviking_keyed: OpenVikingServer, key: str) -> None:
    provider = _provider(openviking_keyed.url, key)
    with pytest.raises(ProviderError) as info:
        provider.health(_d())
    message = str(info.value)
    assert any(word in message for word in ("UNAUTHENTICATED", "PERMISSION_DENIED", "authentication failed"))
    if key:
        assert key not in message
    with pytest.raises(ProviderError):
        provider.ensure_target(_d())
