"""OpenViking as a paxm provider (``type: openviking``).

Only the hookimpl and the type declaration live here; httpx and the provider module are
imported when a provider is built, so loading the plugin stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from paxm_core import ConfigKey, ProviderConfig, ProviderType, hookimpl

__all__ = ["OPENVIKING", "paxm_register_providers"]

_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
DEFAULT_URL = "http://localhost:1933"
DEFAULT_TIMEOUT = 30.0
DEFAULT_USER = "default"
DEFAULT_DIR = "paxm"


def _factory(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_openviking.provider import OpenVikingProvider

    return OpenVikingProvider(name, config)


def validate(config: ProviderConfig) -> list[str]:
    """Every problem with ``config``, one sentence each (``user_id``, ``memory_dir``: ``viking://`` segments)."""
    from paxm_core.http_client import url_problems

    problems = url_problems(config.base_url)
    if config.timeout is not None and config.timeout <= 0:
        problems.append("timeout must be positive")
    for key, value in (("user_id", config.user_id), ("memory_dir", str(config.option("memory_dir") or ""))):
        if value.strip() and (not _SEGMENT.match(value.strip()) or ".." in value):
            problems.append(f"{key} must be letters, digits, '.', '_' or '-' (got {value!r})")
    return problems


OPENVIKING = ProviderType(
    type="openviking",
    factory=_factory,
    description="OpenViking context database (memory files with paxm attribution, searchable on return)",
    capabilities=frozenset({"put_batch", "delete", "attribution", "turn_boundaries"}),
    config_keys=(
        ConfigKey("base_url", "openviking-server URL", required=True, ask=True, default=DEFAULT_URL),
        ConfigKey("api_key", "user API key (X-API-Key); empty for a dev-mode server", secret=True, ask=True),
        ConfigKey("user_id", "OpenViking user namespace (dev mode: default)", ask=True, default=DEFAULT_USER),
        ConfigKey("memory_dir", "directory under the user's memories that holds paxm's files", default=DEFAULT_DIR),
        ConfigKey("timeout", "HTTP timeout per call (the router's deadline always wins)", kind="duration"),
    ),
    locality="keyed",
    passive_timeout=1.0,
    validate=validate,
    package="paxm-provider-openviking",
    setup_priority=60,
    # no normalize: a config without base_url stays so (the provider applies DEFAULT_URL itself)
    default_entry=ProviderConfig(type="openviking", base_url=DEFAULT_URL),
)


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    register(OPENVIKING)
