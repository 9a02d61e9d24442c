"""paxm: a memory adaptor for coding agents.

This is the public surface plugins import from (``from paxm_core import hookimpl, Provider,
MemoryItem``).  It stays import-light: no click, yaml, httpx, mcp or vendor SDK is imported
here, because hook processes start on every prompt.

The names are resolved lazily (PEP 562 module ``__getattr__``): ``import paxm_core`` loads
nothing but this file, and ``from paxm_core import MemoryItem`` imports ``paxm_core.api.types`` on
first use.  A daemon answering its first prompt after a cold start therefore pays only for the
modules that answer needs, not for the whole public surface (pluggy, the integration contract,
attribution, ...).  Type checkers see the eager imports under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import sys as _sys

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (type checkers treat the name so)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from paxm_core.api.deadline import Deadline
    from paxm_core.api.errors import (
        ConfigError,
        DeadlineExceeded,
        IntegrationError,
        PaxmError,
        PluginError,
        ProviderError,
        ProviderNotInstalled,
        QueueError,
        RecallError,
        UsageError,
        WriteError,
    )
    from paxm_core.api.hookspecs import hookimpl
    from paxm_core.api.integration import Finding, InstallContext, Integration
    from paxm_core.api.protocols import (
        CAP_ATTRIBUTION,
        CAP_CLEANUP_EXPIRED,
        CAP_CLOSE,
        CAP_DELETE,
        CAP_EVAL_SCOPE,
        CAP_PUT_BATCH,
        CAP_TURN_BOUNDARIES,
        ConfigKey,
        Provider,
        ProviderFactory,
        ProviderType,
        SupportsCapabilities,
        SupportsCleanupExpired,
        SupportsClose,
        SupportsDelete,
        SupportsEnsureTarget,
        SupportsEvalScopeCleanup,
        SupportsPutBatch,
        SupportsTurnBoundaries,
        capabilities_of,
    )
    from paxm_core.api.provider_config import ProviderConfig, resolve_secret
    from paxm_core.api.timefmt import format_time, parse_time
    from paxm_core.api.types import (
        SEMANTIC_SCORE_KIND_PREFIX,
        TIER_LTM,
        TIER_STM,
        MemoryHit,
        MemoryItem,
        MemoryOrigin,
        MemoryRef,
        MemoryScope,
        Provenance,
        ProviderErrorInfo,
        ProviderHealth,
        ProviderRecall,
        SearchQuery,
        TurnContext,
        normalize_tier,
    )
    from paxm_core.attribution import restore_attribution, sync_attribution
    from paxm_core.integration import IntegrationBase
    from paxm_core.plugins import is_secret_option

__version__ = "0.1.0"

#: public name -> the module that defines it; resolved on first attribute access
_LAZY: dict[str, str] = {
    "restore_attribution": "paxm_core.attribution",
    "is_secret_option": "paxm_core.plugins",
    "sync_attribution": "paxm_core.attribution",
    "Deadline": "paxm_core.api.deadline",
    "ConfigError": "paxm_core.api.errors",
    "DeadlineExceeded": "paxm_core.api.errors",
    "IntegrationError": "paxm_core.api.errors",
    "PaxmError": "paxm_core.api.errors",
    "PluginError": "paxm_core.api.errors",
    "ProviderError": "paxm_core.api.errors",
    "ProviderNotInstalled": "paxm_core.api.errors",
    "QueueError": "paxm_core.api.errors",
    "RecallError": "paxm_core.api.errors",
    "UsageError": "paxm_core.api.errors",
    "WriteError": "paxm_core.api.errors",
    "hookimpl": "paxm_core.api.hookspecs",
    "Finding": "paxm_core.api.integration",
    "InstallContext": "paxm_core.api.integration",
    "IntegrationBase": "paxm_core.integration",
    "CAP_ATTRIBUTION": "paxm_core.api.protocols",
    "CAP_CLEANUP_EXPIRED": "paxm_core.api.protocols",
    "CAP_CLOSE": "paxm_core.api.protocols",
    "CAP_DELETE": "paxm_core.api.protocols",
    "CAP_EVAL_SCOPE": "paxm_core.api.protocols",
    "CAP_PUT_BATCH": "paxm_core.api.protocols",
    "CAP_TURN_BOUNDARIES": "paxm_core.api.protocols",
    "ConfigKey": "paxm_core.api.protocols",
    "Integration": "paxm_core.api.integration",
    "Provider": "paxm_core.api.protocols",
    "ProviderFactory": "paxm_core.api.protocols",
    "ProviderType": "paxm_core.api.protocols",
    "SupportsCapabilities": "paxm_core.api.protocols",
    "SupportsCleanupExpired": "paxm_core.api.protocols",
    "SupportsClose": "paxm_core.api.protocols",
    "SupportsDelete": "paxm_core.api.protocols",
    "SupportsEnsureTarget": "paxm_core.api.protocols",
    "SupportsEvalScopeCleanup": "paxm_core.api.protocols",
    "SupportsPutBatch": "paxm_core.api.protocols",
    "SupportsTurnBoundaries": "paxm_core.api.protocols",
    "capabilities_of": "paxm_core.api.protocols",
    "ProviderConfig": "paxm_core.api.provider_config",
    "resolve_secret": "paxm_core.api.provider_config",
    "format_time": "paxm_core.api.timefmt",
    "parse_time": "paxm_core.api.timefmt",
    "SEMANTIC_SCORE_KIND_PREFIX": "paxm_core.api.types",
    "TIER_LTM": "paxm_core.api.types",
    "TIER_STM": "paxm_core.api.types",
    "MemoryHit": "paxm_core.api.types",
    "MemoryItem": "paxm_core.api.types",
    "MemoryOrigin": "paxm_core.api.types",
    "MemoryRef": "paxm_core.api.types",
    "MemoryScope": "paxm_core.api.types",
    "Provenance": "paxm_core.api.types",
    "ProviderErrorInfo": "paxm_core.api.types",
    "ProviderHealth": "paxm_core.api.types",
    "ProviderRecall": "paxm_core.api.types",
    "SearchQuery": "paxm_core.api.types",
    "TurnContext": "paxm_core.api.types",
    "normalize_tier": "paxm_core.api.types",
}


def __getattr__(name: str) -> Any:
    """Import the module defining ``name`` on first access and cache the value here."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    __import__(module)  # not importlib: ``import paxm_core`` stays this one file
    value = getattr(_sys.modules[module], name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CAP_ATTRIBUTION",
    "CAP_CLEANUP_EXPIRED",
    "CAP_CLOSE",
    "CAP_DELETE",
    "CAP_EVAL_SCOPE",
    "CAP_PUT_BATCH",
    "CAP_TURN_BOUNDARIES",
    "TIER_LTM",
    "TIER_STM",
    "ConfigError",
    "ConfigKey",
    "Deadline",
    "DeadlineExceeded",
    "Finding",
    "InstallContext",
    "Integration",
    "IntegrationBase",
    "IntegrationError",
    "MemoryHit",
    "SEMANTIC_SCORE_KIND_PREFIX",
    "MemoryItem",
    "MemoryOrigin",
    "MemoryRef",
    "MemoryScope",
    "PaxmError",
    "PluginError",
    "Provenance",
    "Provider",
    "ProviderConfig",
    "ProviderError",
    "ProviderErrorInfo",
    "ProviderFactory",
    "ProviderHealth",
    "ProviderNotInstalled",
    "ProviderRecall",
    "ProviderType",
    "QueueError",
    "RecallError",
    "SearchQuery",
    "SupportsCapabilities",
    "SupportsCleanupExpired",
    "SupportsClose",
    "SupportsDelete",
    "SupportsEnsureTarget",
    "SupportsEvalScopeCleanup",
    "SupportsPutBatch",
    "SupportsTurnBoundaries",
    "TurnContext",
    "UsageError",
    "WriteError",
    "__version__",
    "capabilities_of",
    "is_secret_option",
    "format_time",
    "hookimpl",
    "normalize_tier",
    "parse_time",
    "resolve_secret",
    "restore_attribution",
    "sync_attribution",
]
