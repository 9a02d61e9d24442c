"""One provider's hits through expiry, tier, thresholds, weighting, attribution and calibration."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from paxm_core.attribution import effective_expires_at, effective_tier, restore_hit
from paxm_core.router import ranking
from paxm_core.router.policy import Route, SearchPolicy
from paxm_core.types import MemoryHit, normalize_tier

__all__ = ["eligible_hits", "normalized_tiers"]


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def normalized_tiers(tiers: Iterable[str]) -> tuple[str, ...]:
    """Tiers normalized (anything but ``stm`` is ``ltm``), deduplicated, in order."""
    return tuple(dict.fromkeys(normalize_tier(t) for t in tiers))


def eligible_hits(
    name: str, hits: list[MemoryHit], route: Route, policy: SearchPolicy, tiers: tuple[str, ...], now: datetime
) -> list[MemoryHit]:
    """Stamp, filter, score and calibrate one provider's hits (copies; inputs untouched).

    Filters run on the provider's own objects first so that dropped hits cost no copy.
    """
    weight = route.effective_weight
    min_relevance = route.min_relevance or policy.min_relevance
    min_score = route.min_score or policy.min_score
    boost = policy.recency_boost
    kept: list[MemoryHit] = []
    recency_of: dict[int, float] = {}
    for original in hits:
        expires_at = effective_expires_at(original)
        if expires_at is not None and expires_at <= now:
            continue
        tier = effective_tier(original)
        if tiers and tier not in tiers:
            continue
        relevance = ranking.normalized_relevance(original)
        if relevance < min_relevance:
            continue
        created = _aware(original.created_at) if original.created_at is not None else None
        recency = ranking.recency_score(created, boost, now) if boost > 0 else 0.0
        score = ranking.apply_weight_and_recency(relevance, weight, recency)
        if score < min_score:
            continue
        hit = MemoryHit(
            provider=name,
            id=original.id,
            text=original.text,
            relevance=relevance,
            score=score,
            raw_score=original.raw_score,
            raw_score_kind=original.raw_score_kind,
            source=original.source,
            metadata=dict(original.metadata),
            created_at=created,  # naive timestamps are taken as UTC, like everywhere in paxm
            tier=tier,
            expires_at=expires_at,
            origin=original.origin,
            scope=original.scope,
            provenance=original.provenance,
        )
        restore_hit(hit)
        recency_of[id(hit)] = recency
        kept.append(hit)
    calibrated = ranking.calibrate(kept)
    for hit in calibrated:
        hit.ranking = ranking.apply_weight_and_recency(hit.ranking, weight, recency_of[id(hit)])
    return calibrated
