"""Mem0 as a paxm provider: ``mem0`` (self-hosted REST server) and ``mem0-cloud`` (managed API).

Only the registration lives here; httpx and the provider classes are imported when a provider
is built, so loading the plugin costs nothing on the hook path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import ConfigKey, ProviderConfig, ProviderType, hookimpl

__all__ = ["CLOUD_TYPE", "SELF_HOSTED_TYPE", "paxm_register_providers"]

DISTRIBUTION = "paxm-provider-mem0"
_CAPABILITIES = frozenset({"put_batch", "delete", "close", "attribution"})


def _self_hosted(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_mem0.selfhosted import Mem0Provider

    return Mem0Provider(name, config)


def _cloud(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_mem0.cloud import Mem0CloudProvider

    return Mem0CloudProvider(name, config)


def _validator(cloud: bool) -> Callable[[ProviderConfig], list[str]]:
    def validate(config: ProviderConfig) -> list[str]:
        from paxm_provider_mem0.base import problems

        return problems(config, cloud=cloud)

    return validate


SELF_HOSTED_URL = "http://localhost:8888"
CLOUD_URL = "https://api.mem0.ai"


def _normalize_self_hosted(config: ProviderConfig) -> None:
    config.base_url = config.base_url or SELF_HOSTED_URL
    config.extra["score_semantics"] = config.text("score_semantics").lower() or "similarity"
    config.extra["search_scope_payload"] = config.text("search_scope_payload").lower() or "auto"


def _normalize_cloud(config: ProviderConfig) -> None:
    config.base_url = config.base_url or CLOUD_URL
    config.extra["score_semantics"] = config.text("score_semantics").lower() or "similarity"
    if config.extra.get("infer") is None:
        # the managed API's LLM rewriting costs a call per write: asked for, never assumed
        config.extra["infer"] = False


_COMMON_KEYS = (
    ConfigKey(
        "user_id",
        "Mem0 user the memories belong to (one of user_id/agent_id/run_id is required; default: your paxm user)",
        ask=True,
    ),
    ConfigKey("agent_id", "Mem0 agent the memories belong to (instead of, or with, user_id)"),
    ConfigKey("run_id", "Mem0 run the memories belong to; a paxm-eval-* run can be cleaned up wholesale"),
    ConfigKey(
        "score_semantics",
        "how to read Mem0's score: similarity (higher is better) or distance (pgvector cosine distance)",
        default="similarity",
        choices=("similarity", "distance"),
    ),
    ConfigKey(
        "infer",
        "let Mem0's LLM rewrite each write (one LLM call per write); false (default) stores text verbatim",
        kind="bool",
        default=False,
    ),
    ConfigKey("timeout", "HTTP timeout per call; the caller's deadline always wins", kind="duration"),
)

SELF_HOSTED_TYPE = ProviderType(
    type="mem0",
    factory=_self_hosted,
    description="Mem0 self-hosted REST server",
    capabilities=_CAPABILITIES,
    config_keys=(
        ConfigKey("base_url", "Mem0 server URL, without /v1", required=True, ask=True, default=SELF_HOSTED_URL),
        ConfigKey(
            "api_key",
            "Mem0 server API key (blank if auth is disabled); env:NAME reads a variable",
            secret=True,
            ask=True,
        ),
        *_COMMON_KEYS,
        ConfigKey(
            "search_scope_payload",
            "where search sends the target ids: auto (detect), filters, or top_level (older servers)",
            default="auto",
            choices=("auto", "filters", "top_level"),
        ),
    ),
    locality="keyed",
    validate=_validator(cloud=False),
    package=DISTRIBUTION,
    setup_priority=2,
    normalize=_normalize_self_hosted,
    default_entry=ProviderConfig(
        type="mem0", base_url=SELF_HOSTED_URL, extra={"score_semantics": "similarity", "search_scope_payload": "auto"}
    ),
)

CLOUD_TYPE = ProviderType(
    type="mem0-cloud",
    factory=_cloud,
    description="Mem0 Cloud (managed, api.mem0.ai)",
    capabilities=_CAPABILITIES,
    config_keys=(
        ConfigKey("base_url", "Mem0 Cloud API URL", ask=True, default=CLOUD_URL),
        ConfigKey(
            "api_key",
            "Mem0 Cloud API key (m0-...); env:NAME reads a variable, MEM0_API_KEY is used when blank",
            secret=True,
            required=True,
            ask=True,
        ),
        *_COMMON_KEYS,
    ),
    locality="cloud",
    # a managed API over the internet: upstream gives cloud routes 800 ms in passive recall
    passive_timeout=0.8,
    validate=_validator(cloud=True),
    package=DISTRIBUTION,
    setup_priority=3,
    normalize=_normalize_cloud,
    default_entry=ProviderConfig(
        type="mem0-cloud", base_url=CLOUD_URL, extra={"score_semantics": "similarity", "infer": False}
    ),
)


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    register(SELF_HOSTED_TYPE)
    register(CLOUD_TYPE)
