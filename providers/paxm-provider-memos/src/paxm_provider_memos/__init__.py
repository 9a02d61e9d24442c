"""MemOS as paxm providers: ``memos`` (self-hosted product API) and ``memos-cloud`` (MemOS Cloud).

Only the hookimpl and the type declarations live here; httpx and the provider modules are
imported when a provider is built, so loading the plugin stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import ConfigKey, ProviderConfig, ProviderType, hookimpl

__all__ = ["MEMOS", "MEMOS_CLOUD", "paxm_register_providers"]

_PACKAGE = "paxm-provider-memos"
SEARCH_MODES = ("fast", "fine", "mixture")
SELF_HOSTED_URL = "http://localhost:8000"
CLOUD_URL = "https://memos.memtensor.cn/api/openmem/v1"
DEFAULT_TIMEOUT = 30.0
DEFAULT_USER = "paxm"
DEFAULT_CUBE = "paxm"


def _memos(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_memos.selfhosted import MemOSProvider

    return MemOSProvider(name, config)


def _memos_cloud(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_memos.cloud import MemOSCloudProvider

    return MemOSCloudProvider(name, config)


def _url_problems(config: ProviderConfig) -> list[str]:
    from paxm_core.http_client import url_problems

    return url_problems(config.base_url)


def validate_memos(config: ProviderConfig) -> list[str]:
    """Every problem with a ``memos`` config, one sentence each."""
    problems = _url_problems(config)
    mode = config.text("search_mode").lower()
    if mode and mode not in SEARCH_MODES:
        problems.append(f"search_mode must be one of {', '.join(SEARCH_MODES)} (got {mode!r})")
    return problems


def _validate_cloud(config: ProviderConfig) -> list[str]:
    problems = _url_problems(config)
    if not config.api_key.strip():
        problems.append("api_key is required (or api_key: env:MEMOS_API_KEY)")
    return problems


def _normalize_memos(config: ProviderConfig) -> None:
    config.base_url = config.base_url or SELF_HOSTED_URL
    config.extra["search_mode"] = config.option("search_mode") or "fast"


def _normalize_cloud(config: ProviderConfig) -> None:
    config.base_url = config.base_url or CLOUD_URL


_TIMEOUT = ConfigKey("timeout", "HTTP timeout per call (the router's deadline always wins)", kind="duration")

MEMOS = ProviderType(
    type="memos",
    factory=_memos,
    description="MemOS self-hosted product API (fast-mode writes, searchable on return)",
    capabilities=frozenset({"put_batch", "delete", "attribution"}),
    config_keys=(
        ConfigKey("base_url", "MemOS server URL", required=True, ask=True, default=SELF_HOSTED_URL),
        ConfigKey("api_key", "optional bearer token for a server behind auth", secret=True, ask=True),
        ConfigKey("user_id", "MemOS user id", ask=True, default=DEFAULT_USER),
        ConfigKey("mem_cube_id", "memory cube to read and write", ask=True, default=DEFAULT_CUBE),
        ConfigKey("search_mode", "MemOS search mode", default="fast", choices=SEARCH_MODES),
        _TIMEOUT,
    ),
    locality="keyed",
    passive_timeout=1.0,
    validate=validate_memos,
    package=_PACKAGE,
    setup_priority=40,
    normalize=_normalize_memos,
    default_entry=ProviderConfig(type="memos", base_url=SELF_HOSTED_URL, extra={"search_mode": "fast"}),
)

MEMOS_CLOUD = ProviderType(
    type="memos-cloud",
    factory=_memos_cloud,
    description="MemOS Cloud (OpenMem API, Token auth)",
    capabilities=frozenset({"put_batch", "attribution"}),
    config_keys=(
        ConfigKey("api_key", "MemOS Cloud API key", secret=True, required=True, ask=True),
        ConfigKey("user_id", "MemOS Cloud user id", ask=True, default=DEFAULT_USER),
        ConfigKey("agent_id", "optional agent id to narrow reads and writes", ask=True),
        ConfigKey(
            "base_url",
            "OpenMem API URL (global: https://api.memt.ai/platform/api/openmem/v1)",
            default=CLOUD_URL,
        ),
        _TIMEOUT,
    ),
    locality="cloud",
    passive_timeout=2.0,
    validate=_validate_cloud,
    package=_PACKAGE,
    setup_priority=41,
    normalize=_normalize_cloud,
    default_entry=ProviderConfig(type="memos-cloud", base_url=CLOUD_URL),
)


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    register(MEMOS)
    register(MEMOS_CLOUD)
