"""paxm's ``jsonrpc`` provider type: external plugins in any language.  Only the hookimpl lives here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import ProviderConfig, hookimpl


def _factory(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_jsonrpc.provider import JsonRpcProvider

    return JsonRpcProvider(name, config)


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    register(
        "jsonrpc",
        _factory,
        description="External plugin executable speaking JSON-RPC 2.0 over stdio (any language)",
        # put_batch/delete/attribution depend on the plugin: advertised at run time through
        # paxm.capabilities (JsonRpcProvider.capabilities), so nothing is declared statically.
    )
