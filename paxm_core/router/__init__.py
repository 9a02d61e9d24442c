"""The memory router: fan-out, bulkheads, thresholds, calibrated ranking, dedupe, writes.

See ``docs/router.md`` for the semantics.
"""

from __future__ import annotations

from paxm_core.router.core import Router
from paxm_core.router.forget import ForgetResult, ProviderForget
from paxm_core.router.policy import (
    PutPolicy,
    RecallResult,
    RememberResult,
    Route,
    SearchPolicy,
    candidate_limit,
)

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
