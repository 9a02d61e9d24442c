"""The memory router: fan-out, bulkheads, thresholds, calibrated ranking, dedupe, writes.

See ``docs/router.md`` for the semantics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.router.core import Router
from paxm_core.router.policy import (
    PutPolicy,
    RecallResult,
    RememberResult,
    Route,
    SearchPolicy,
    candidate_limit,
)

if TYPE_CHECKING:
    from paxm_core.router.forget import ForgetResult, ProviderForget

__all__ = [
    "ForgetResult",
    "PutPolicy",
    "ProviderForget",
    "RecallResult",
    "RememberResult",
    "Route",
    "Router",
    "SearchPolicy",
    "candidate_limit",
]


def __getattr__(name: str) -> object:
    # the forget results are imported with forget (paxm forget), not by every recall
    if name in ("ForgetResult", "ProviderForget"):
        from paxm_core.router import forget

        return getattr(forget, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
