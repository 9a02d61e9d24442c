"""paxm: a memory adaptor for coding agents.

This is the public surface plugins import from (``from paxm_core import hookimpl, Provider,
MemoryItem``).  It stays import-light: no click, yaml, httpx, mcp or vendor SDK is imported
here, because hook processes start on every prompt.
"""

from __future__ import annotations

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
from paxm_core.protocols import (
    CAP_ATTRIBUTION,
    CAP_CLEANUP_EXPIRED,
    CAP_CLOSE,
    CAP_DELETE,
    CAP_EVAL_SCOPE,
    CAP_PUT_BATCH,
    CAP_TURN_BOUNDARIES,
    Integration,
    Provider,
    ProviderFactory,
    ProviderType,
    SupportsCapabilities,
    SupportsCleanupExpired,
    SupportsClose,
    SupportsDelete,
    SupportsEvalScopeCleanup,
    SupportsPutBatch,
    SupportsTurnBoundaries,
    capabilities_of,
)
from paxm_core.provider_config import ProviderConfig, resolve_secret
from paxm_core.timefmt import format_time, parse_time
from paxm_core.types import (
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
    "Deadline",
    "DeadlineExceeded",
    "Integration",
    "IntegrationError",
    "MemoryHit",
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
