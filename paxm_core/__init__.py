"""paxm: a memory adaptor for coding agents.

This is the public surface plugins import from (``from paxm_core import hookimpl, Provider,
MemoryItem``).  It stays import-light: no click, yaml, httpx, mcp or vendor SDK is imported
here, because hook processes start on every prompt.

The names are resolved lazily (PEP 562 module ``__getattr__``): ``import paxm_core`` loads
nothing but this file, and ``from paxm_core import MemoryItem`` imports ``paxm_core.types`` on
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

    from paxm_core.attribution import restore_attribution, sync_attribution
    from paxm_core.deadline import Deadline
    from paxm_core.errors import (
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
    from paxm_core.hookspecs import hookimpl
    from paxm_core.integration import Finding, InstallContext, IntegrationBase
    from paxm_core.protocols import (
        CAP_ATTRIBUTION,
        CAP_CLEANUP_EXPIRED,
        CAP_CLOSE,
        CAP_DELETE,
        CAP_EVAL_SCOPE,
        CAP_PUT_BATCH,
        CAP_TURN_BOUNDARIES,
        ConfigKey,
        Integration,
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
    from paxm_core.provider_config import ProviderConfig, resolve_secret
    from paxm_core.timefmt import format_time, parse_time
    from paxm_core.types import (
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

__version__ = "0.1.0"

#: public name -> the module that defines it; resolved on first attribute access
_LAZY: dict[str, str] = {
    "restore_attribution": "paxm_core.attribution",
    "sync_attribution": "paxm_core.attribution",
    "Deadline": "paxm_core.deadline",
    "ConfigError": "paxm_core.errors",
    "DeadlineExceeded": "paxm_core.errors",
    "IntegrationError": "paxm_core.errors",
    "PaxmError": "paxm_core.errors",
    "PluginError": "paxm_core.errors",
    "ProviderError": "paxm_core.errors",
    "ProviderNotInstalled": "paxm_core.errors",
    "QueueError": "paxm_core.errors",
    "RecallError": "paxm_core.errors",
    "UsageError": "paxm_core.errors",
    "WriteError": "paxm_core.errors",
    "hookimpl": "paxm_core.hookspecs",
    "Finding": "paxm_core.integration",
    "InstallContext": "paxm_core.integration",
    "IntegrationBase": "paxm_core.integration",
    "CAP_ATTRIBUTION": "paxm_core.protocols",
    "CAP_CLEANUP_EXPIRED": "paxm_core.protocols",
    "CAP_CLOSE": "paxm_core.protocols",
    "CAP_DELETE": "paxm_core.protocols",
    "CAP_EVAL_SCOPE": "paxm_core.protocols",
    "CAP_PUT_BATCH": "paxm_core.protocols",
    "CAP_TURN_BOUNDARIES": "paxm_core.protocols",
    "ConfigKey": "paxm_core.protocols",
    "Integration": "paxm_core.protocols",
    "Provider": "paxm_core.protocols",
    "ProviderFactory": "paxm_core.protocols",
    "ProviderType": "paxm_core.protocols",
    "SupportsCapabilities": "paxm_core.protocols",
    "SupportsCleanupExpired": "paxm_core.protocols",
    "SupportsClose": "paxm_core.protocols",
    "SupportsDelete": "paxm_core.protocols",
    "SupportsEnsureTarget": "paxm_core.protocols",
    "SupportsEvalScopeCleanup": "paxm_core.protocols",
    "SupportsPutBatch": "paxm_core.protocols",
    "SupportsTurnBoundaries": "paxm_core.protocols",
    "capabilities_of": "paxm_core.protocols",
    "ProviderConfig": "paxm_core.provider_config",
    "resolve_secret": "paxm_core.provider_config",
    "format_time": "paxm_core.timefmt",
    "parse_time": "paxm_core.timefmt",
    "SEMANTIC_SCORE_KIND_PREFIX": "paxm_core.types",
    "TIER_LTM": "paxm_core.types",
    "TIER_STM": "paxm_core.types",
    "MemoryHit": "paxm_core.types",
    "MemoryItem": "paxm_core.types",
    "MemoryOrigin": "paxm_core.types",
    "MemoryRef": "paxm_core.types",
    "MemoryScope": "paxm_core.types",
    "Provenance": "paxm_core.types",
    "ProviderErrorInfo": "paxm_core.types",
    "ProviderHealth": "paxm_core.types",
    "ProviderRecall": "paxm_core.types",
    "SearchQuery": "paxm_core.types",
    "TurnContext": "paxm_core.types",
    "normalize_tier": "paxm_core.types",
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
    "format_time",
    "hookimpl",
    "normalize_tier",
    "parse_time",
    "resolve_secret",
    "restore_attribution",
    "sync_attribution",
]
