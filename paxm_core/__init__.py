"""paxm: a memory adaptor for coding agents.

This is the public surface plugins import from (``from paxm_core import hookimpl, Provider,
MemoryItem``).  It stays import-light: no click, yaml, httpx, mcp or vendor SDK is imported
here, because hook processes start on every prompt.

The names are resolved lazily (PEP 562 module ``__getattr__``): ``import paxm_core`` loads
nothing but this file, and ``from paxm_core import MemoryItem`` imports ``paxm_core.api.types`` on
first use.  A daemon answering its first prompt after a cold start therefore pays only for the
modules that answer needs, not for the whole public surface (pluggy, the integration contract,
attribution, ...).  Type checkers see the eager imports under ``TYPE_CHECKING``, each
``X as X``: that marks it exported, since they cannot read ``__all__`` (built from ``_LAZY``).
"""

from __future__ import annotations

import sys as _sys

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (type checkers treat the name so)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from paxm_core.api.deadline import Deadline as Deadline
    from paxm_core.api.errors import ConfigError as ConfigError
    from paxm_core.api.errors import DeadlineExceeded as DeadlineExceeded
    from paxm_core.api.errors import IntegrationError as IntegrationError
    from paxm_core.api.errors import PaxmError as PaxmError
    from paxm_core.api.errors import PluginError as PluginError
    from paxm_core.api.errors import ProviderError as ProviderError
    from paxm_core.api.errors import ProviderNotInstalled as ProviderNotInstalled
    from paxm_core.api.errors import QueueError as QueueError
    from paxm_core.api.errors import RecallError as RecallError
    from paxm_core.api.errors import UsageError as UsageError
    from paxm_core.api.errors import WriteError as WriteError
    from paxm_core.api.hookspecs import hookimpl as hookimpl
    from paxm_core.api.integration import Finding as Finding
    from paxm_core.api.integration import InstallContext as InstallContext
    from paxm_core.api.integration import Integration as Integration
    from paxm_core.api.protocols import CAP_ATTRIBUTION as CAP_ATTRIBUTION
    from paxm_core.api.protocols import CAP_CLEANUP_EXPIRED as CAP_CLEANUP_EXPIRED
    from paxm_core.api.protocols import CAP_CLOSE as CAP_CLOSE
    from paxm_core.api.protocols import CAP_DELETE as CAP_DELETE
    from paxm_core.api.protocols import CAP_EVAL_SCOPE as CAP_EVAL_SCOPE
    from paxm_core.api.protocols import CAP_PUT_BATCH as CAP_PUT_BATCH
    from paxm_core.api.protocols import CAP_TURN_BOUNDARIES as CAP_TURN_BOUNDARIES
    from paxm_core.api.protocols import ConfigKey as ConfigKey
    from paxm_core.api.protocols import Provider as Provider
    from paxm_core.api.protocols import ProviderFactory as ProviderFactory
    from paxm_core.api.protocols import ProviderType as ProviderType
    from paxm_core.api.protocols import SupportsCapabilities as SupportsCapabilities
    from paxm_core.api.protocols import SupportsCleanupExpired as SupportsCleanupExpired
    from paxm_core.api.protocols import SupportsClose as SupportsClose
    from paxm_core.api.protocols import SupportsDelete as SupportsDelete
    from paxm_core.api.protocols import SupportsEnsureTarget as SupportsEnsureTarget
    from paxm_core.api.protocols import SupportsEvalScopeCleanup as SupportsEvalScopeCleanup
    from paxm_core.api.protocols import SupportsPutBatch as SupportsPutBatch
    from paxm_core.api.protocols import SupportsTurnBoundaries as SupportsTurnBoundaries
    from paxm_core.api.protocols import capabilities_of as capabilities_of
    from paxm_core.api.provider_config import ProviderConfig as ProviderConfig
    from paxm_core.api.provider_config import resolve_secret as resolve_secret
    from paxm_core.api.timefmt import format_time as format_time
    from paxm_core.api.timefmt import parse_time as parse_time
    from paxm_core.api.types import SEMANTIC_SCORE_KIND_PREFIX as SEMANTIC_SCORE_KIND_PREFIX
    from paxm_core.api.types import TIER_LTM as TIER_LTM
    from paxm_core.api.types import TIER_STM as TIER_STM
    from paxm_core.api.types import MemoryHit as MemoryHit
    from paxm_core.api.types import MemoryItem as MemoryItem
    from paxm_core.api.types import MemoryOrigin as MemoryOrigin
    from paxm_core.api.types import MemoryRef as MemoryRef
    from paxm_core.api.types import MemoryScope as MemoryScope
    from paxm_core.api.types import Provenance as Provenance
    from paxm_core.api.types import ProviderErrorInfo as ProviderErrorInfo
    from paxm_core.api.types import ProviderHealth as ProviderHealth
    from paxm_core.api.types import ProviderRecall as ProviderRecall
    from paxm_core.api.types import SearchQuery as SearchQuery
    from paxm_core.api.types import TurnContext as TurnContext
    from paxm_core.api.types import normalize_tier as normalize_tier
    from paxm_core.attribution import restore_attribution as restore_attribution
    from paxm_core.attribution import sync_attribution as sync_attribution
    from paxm_core.integration import IntegrationBase as IntegrationBase
    from paxm_core.plugins import is_secret_option as is_secret_option

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


__all__ = ["__version__", *_LAZY]
