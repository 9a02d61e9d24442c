"""paxm's ``jsonrpc`` provider type: external plugins in any language.  Only the hookimpls live here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import ProviderConfig, hookimpl
from paxm_core.api.protocols import ConfigKey, ProviderType


def _factory(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_jsonrpc.provider import JsonRpcProvider

    return JsonRpcProvider(name, config)


DEFAULT_TRANSPORT = "stdio"
DEFAULT_TIMEOUT = 30.0
#: Default ceiling on one response; a runaway plugin must not exhaust memory.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024


def validate(config: ProviderConfig) -> list[str]:
    """Problems with a ``jsonrpc`` config that config loading reports (the rest fail when it is built)."""
    transport = (config.transport or DEFAULT_TRANSPORT).strip()
    return [] if transport == DEFAULT_TRANSPORT else [f"transport {transport!r} is not supported (use stdio)"]


def _normalize(config: ProviderConfig) -> None:
    config.transport = config.transport or DEFAULT_TRANSPORT
    if config.timeout is None:
        config.timeout = DEFAULT_TIMEOUT


PROVIDER_TYPE = ProviderType(
    type="jsonrpc",
    factory=_factory,
    description="External plugin executable speaking JSON-RPC 2.0 over stdio (any language)",
    # put_batch/delete/attribution depend on the plugin: advertised at run time through
    # paxm.capabilities (JsonRpcProvider.capabilities), so nothing is declared statically.
    config_keys=(
        ConfigKey("command", "the plugin executable", required=True, ask=True),
        ConfigKey("args", "its arguments", kind="list"),
        ConfigKey("env", "extra environment variables for it"),
        ConfigKey("transport", "only stdio", default="stdio", choices=("stdio",)),
        ConfigKey("timeout", "per-call timeout (default 30s)", kind="duration", default=30.0),
    ),
    locality="local",
    validate=validate,
    package="paxm-provider-jsonrpc",
    setup_priority=60,
    normalize=_normalize,
    default_entry=ProviderConfig(type="jsonrpc", transport=DEFAULT_TRANSPORT, timeout=DEFAULT_TIMEOUT),
)


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    register(PROVIDER_TYPE)


@hookimpl
def paxm_register_commands(cli: Any) -> None:
    """``paxm eval provider jsonrpc``: the JSON-RPC plugin conformance run."""
    from paxm_provider_jsonrpc.conformance_cmd import attach

    attach(cli)
