"""Routing policies and the router's result types.

A recall profile becomes a :class:`SearchPolicy` and a write profile a :class:`PutPolicy`
(``Runtime.search_policy`` / ``Runtime.put_policy`` do the conversion); the router never reads
config itself, so tests and the capture worker can build policies directly.
"""

from __future__ import annotations

from dataclasses import field

from paxm_core.api.types import MemoryHit, MemoryRef, MemoryScope, ProviderErrorInfo, ProviderRecall, _json, _Wire
from paxm_core.api.values import value_dataclass

__all__ = [
    "FORGET_TIMEOUT",
    "MAX_PROVIDER_CANDIDATES",
    "PutPolicy",
    "RecallResult",
    "RememberResult",
    "Route",
    "SearchPolicy",
    "candidate_limit",
]

#: Upper bound of the candidate pool asked from each provider (unless the caller wants more).
MAX_PROVIDER_CANDIDATES = 100

#: How long one provider may take to delete everything asked of it, by default (``paxm forget``).
FORGET_TIMEOUT = 30.0


@value_dataclass(frozen=True, slots=True)
class Route:
    """One provider in a profile.

    :param name: provider instance name (``providers.<name>``).
    :param required: a failure fails the whole call (``RecallError``/``WriteError``);
        otherwise it is reported in ``provider_errors`` and the call goes on.
    :param weight: multiplies this provider's relevance and calibrated ranking (``<= 0`` means 1).
    :param timeout: seconds this provider may take; ``None`` = only the overall deadline.
    :param min_relevance: when non-zero, replaces the profile's ``min_relevance`` for this provider.
    :param min_score: when non-zero, replaces the profile's ``min_score`` for this provider.
    """

    name: str
    required: bool = False
    weight: float = 1.0
    timeout: float | None = None
    min_relevance: float = 0.0
    min_score: float = 0.0

    @property
    def effective_weight(self) -> float:
        return self.weight if self.weight > 0 else 1.0


@value_dataclass(frozen=True, slots=True)
class SearchPolicy:
    """How one recall fans out and filters.

    ``routes`` empty means every provider the router holds.  ``limit`` is the final number of
    hits (``0`` = the query's own limit, or no limit).  ``tiers`` empty means no tier filter.
    ``optional_grace``: seconds the optional routes may still take once the required ones have
    answered; later ones are reported ``skipped`` (``None``: each waits for its own deadline).
    """

    routes: list[Route] = field(default_factory=list)
    limit: int = 0
    min_relevance: float = 0.0
    min_score: float = 0.0
    recency_boost: float = 0.0
    tiers: tuple[str, ...] = ()
    optional_grace: float | None = None


@value_dataclass(frozen=True, slots=True)
class PutPolicy:
    """How one write fans out and what lifecycle it stamps on items.

    ``tier`` is applied to items without one; ``expires_after`` (seconds) sets ``expires_at``
    from ``created_at`` (or now) on items without one; ``scope`` is applied to items whose
    attribution carries no scope.  ``optional_grace`` as for :class:`SearchPolicy`.
    """

    routes: list[Route] = field(default_factory=list)
    tier: str = ""
    expires_after: float | None = None
    scope: MemoryScope = field(default_factory=MemoryScope)
    optional_grace: float | None = None


def candidate_limit(result_limit: int) -> int:
    """How many candidates to ask each provider for, given the final result limit.

    ``0`` stays ``0`` (the provider's default); a limit of 100 or more is passed through;
    from 33 up the pool is capped at 100; below that it is three times the limit so that
    thresholds, dedupe and calibration still leave enough hits.
    """
    if result_limit <= 0:
        return 0
    if result_limit >= MAX_PROVIDER_CANDIDATES:
        return result_limit
    if result_limit >= MAX_PROVIDER_CANDIDATES // 3:
        return MAX_PROVIDER_CANDIDATES
    return result_limit * 3


@value_dataclass(slots=True)
class RecallResult(_Wire):
    """What a recall returns (upstream's ``RecallResult``)."""

    query: str = field(metadata=_json("query"))
    hits: list[MemoryHit] = field(default_factory=list, metadata=_json("hits"))
    provider_errors: list[ProviderErrorInfo] = field(default_factory=list, metadata=_json("provider_errors,omitempty"))
    provider_recalls: list[ProviderRecall] = field(default_factory=list, metadata=_json("provider_recalls,omitempty"))
    timed_out: bool = field(default=False, metadata=_json("timed_out,omitempty"))


@value_dataclass(slots=True)
class RememberResult(_Wire):
    """What a write returns (upstream's ``RememberResult``): refs sorted by provider.

    ``queued``: optional providers the write was handed to through the capture queue (the
    delivery worker writes it there later, with retries); sorted.
    """

    refs: list[MemoryRef] = field(default_factory=list, metadata=_json("refs"))
    provider_errors: list[ProviderErrorInfo] = field(default_factory=list, metadata=_json("provider_errors,omitempty"))
    queued: list[str] = field(default_factory=list, metadata=_json("queued,omitempty"))
