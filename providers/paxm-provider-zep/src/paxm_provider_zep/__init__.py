"""Zep as a paxm provider.  Only the hookimpl lives here; the SDK is imported when a provider is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import ProviderConfig, hookimpl


def _factory(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_zep.provider import ZepProvider

    return ZepProvider(name, config)


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    register(
        "zep",
        _factory,
        description="Zep knowledge graph (zep-cloud SDK 4.x)",
        capabilities=("put_batch", "delete", "eval_scope_cleanup", "attribution"),
    )
