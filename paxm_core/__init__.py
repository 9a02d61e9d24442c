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
    name: module
    for module, names in (
        ("paxm_core.attribution", "restore_attribution sync_attribution"),
        ("paxm_core.plugins", "is_secret_option"),
        ("paxm_core.api.deadline", "Deadline"),
        (
            "paxm_core.api.errors",
            "ConfigError DeadlineExceeded IntegrationError PaxmError PluginError ProviderError"
            " ProviderNotInstalled QueueError RecallError UsageError WriteError",
        ),
        ("paxm_core.api.hookspecs", "hookimpl"),
        ("paxm_core.api.integration", "Finding InstallContext Integration"),
        ("paxm_core.integration", "IntegrationBase"),
        (
            "paxm_core.api.protocols",
            "CAP_ATTRIBUTION CAP_CLEANUP_EXPIRED CAP_CLOSE CAP_DELETE CAP_EVAL_SCOPE CAP_PUT_BATCH"
            " CAP_TURN_BOUNDARIES ConfigKey Provider ProviderFactory ProviderType SupportsCapabilities"
            " SupportsCleanupExpired SupportsClose SupportsDelete SupportsEnsureTarget"
            " SupportsEvalScopeCleanup SupportsPutBatch SupportsTurnBoundaries capabilities_of",
        ),
        ("paxm_core.api.provider_config", "ProviderConfig resolve_secret"),
        ("paxm_core.api.timefmt", "format_time parse_time"),
        (
            "paxm_core.api.types",
            "SEMANTIC_SCORE_KIND_PREFIX TIER_LTM TIER_STM MemoryHit MemoryItem MemoryOrigin MemoryRef"
            " MemoryScope Provenance ProviderErrorInfo ProviderHealth ProviderRecall SearchQuery"
            " TurnContext normalize_tier",
        ),
    )
    for name in names.split()
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
