"""One provider's hits through expiry, tier, thresholds, weighting, attribution and calibration."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from paxm_core.attribution import META_SCOPE_ID, META_SCOPE_TYPE, effective_expires_at, effective_tier, restore_hit
from paxm_core.router import ranking
from paxm_core.router.policy import Route, SearchPolicy
from paxm_core.types import MemoryHit, Provenance, normalize_tier

__all__ = ["Candidate", "eligible_hits", "normalized_tiers"]


class Candidate:
    """A provider's hit that passed the filters, scored and ranked but not yet copied.

    A recall keeps a few hits out of tens of candidates, and copying a hit (and restoring its
    attribution) is most of the router's own cost, so the copy is made by :meth:`materialize`
    only for the hits that survive dedupe and the final cut.  Until then this carries exactly
    what ranking reads; ``provenance`` holds the scope the restored hit will have (the only
    part of it dedupe and ordering look at).
    """

    __slots__ = (
        "_expires_at",
        "_hit",
        "_original",
        "_tier",
        "created_at",
        "id",
        "provenance",
        "provider",
        "ranking",
        "relevance",
        "score",
        "text",
    )

    def __init__(
        self,
        provider: str,
        original: MemoryHit,
        relevance: float,
        score: float,
        created_at: datetime | None,
        tier: str,
        expires_at: datetime | None,
        provenance: Provenance,
    ) -> None:
        self.provider = provider
        self.id = original.id
        self.text = original.text
        self.relevance = relevance
        self.score = score
        self.ranking = 0.0
        self.created_at = created_at
        self.provenance = provenance
        self._original = original
        self._tier = tier
        self._expires_at = expires_at
        self._hit: MemoryHit | None = None

    def materialize(self) -> MemoryHit:
        """The router-owned copy of the hit (made once), attribution restored, ranking set."""
        if self._hit is None:
            original = self._original
            hit = MemoryHit(
                provider=self.provider,
                id=original.id,
                text=original.text,
                relevance=self.relevance,
                score=self.score,
                raw_score=original.raw_score,
                raw_score_kind=original.raw_score_kind,
                source=original.source,
                metadata=dict(original.metadata),
                created_at=self.created_at,  # naive timestamps are taken as UTC, like everywhere in paxm
                tier=self._tier,
                expires_at=self._expires_at,
                origin=original.origin,
                scope=original.scope,
                provenance=original.provenance,
            )
            restore_hit(hit)
            hit.ranking = self.ranking
            self._hit = hit
        return self._hit

    def to_json(self) -> dict[str, Any]:
        """The copy's JSON (only the rare full-content tie-breaks need it)."""
        return self.materialize().to_json()


def _restored_scope(hit: MemoryHit) -> tuple[str, str]:
    # The scope restore_hit will give the copy: fields, then legacy provenance, then the
    # canonical metadata keys; without both type and id it is reported as "unknown".
    scope, legacy, get = hit.scope, hit.provenance, hit.metadata.get
    kind = scope.type or legacy.scope_type.strip() or (get(META_SCOPE_TYPE) or "").strip()
    ident = scope.id or legacy.scope_id.strip() or (get(META_SCOPE_ID) or "").strip()
    return (kind, ident) if kind and ident else ("unknown", "")


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def normalized_tiers(tiers: Iterable[str]) -> tuple[str, ...]:
    """Tiers normalized (anything but ``stm`` is ``ltm``), deduplicated, in order."""
    return tuple(dict.fromkeys(normalize_tier(t) for t in tiers))


def eligible_hits(
    name: str, hits: list[MemoryHit], route: Route, policy: SearchPolicy, tiers: tuple[str, ...], now: datetime
) -> list[Candidate]:
    """Stamp, filter, score and calibrate one provider's hits (inputs untouched).

    Filters run on the provider's own objects and the result holds :class:`Candidate`
    stand-ins, so that only the hits a recall returns are ever copied.
    """
    weight = route.effective_weight
    min_relevance = route.min_relevance or policy.min_relevance
    min_score = route.min_score or policy.min_score
    boost = policy.recency_boost
    kept: list[Candidate] = []
    recency_of: dict[int, float] = {}
    scopes: dict[tuple[str, str], Provenance] = {}
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
        scope = _restored_scope(original)
        provenance = scopes.get(scope)
        if provenance is None:
            provenance = scopes[scope] = Provenance(scope_type=scope[0], scope_id=scope[1])
        hit = Candidate(name, original, relevance, score, created, tier, expires_at, provenance)
        recency_of[id(hit)] = recency
        kept.append(hit)
    calibrated = ranking.calibrate(kept)
    for hit in calibrated:
        hit.ranking = ranking.apply_weight_and_recency(hit.ranking, weight, recency_of[id(hit)])
    return calibrated
