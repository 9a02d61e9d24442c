"""One provider's hits through expiry, tier, thresholds, weighting, attribution and calibration."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from operator import itemgetter
from typing import NamedTuple

import paxm_core.router.ranking as ranking
from paxm_core.api.json import JSONObject
from paxm_core.api.types import MemoryHit, normalize_tier
from paxm_core.attribution import (
    META_EXPIRES_AT,
    META_SCOPE_ID,
    META_SCOPE_TYPE,
    effective_expires_at,
    effective_tier,
    restore_hit,
)
from paxm_core.router.policy import Route, SearchPolicy

__all__ = [
    "FIRST_HIT_SHARE",
    "Candidate",
    "Entry",
    "eligible_hits",
    "finite_keys",
    "normalized_tiers",
    "select",
    "sort_entries",
    "within_best",
]


class Candidate:
    """A provider's hit that passed the filters, scored and ranked but not yet copied.

    A recall keeps a few hits out of tens of candidates, so the router-owned copy (with its
    attribution restored) is made by :meth:`materialize` only for the hits that survive dedupe
    and the final cut.  ``provenance`` is the scope the restored copy will have, which is what
    dedupe and the final order read.
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
        tier: str | None,
        expires_at: datetime | None,
        ranking: float = 0.0,
    ) -> None:
        self.provider = provider
        self.relevance = relevance
        self.score = score
        self.ranking = ranking
        self._original = original
        self._tier = tier
        self._expires_at = expires_at
        self.created_at = created_at
        self.id = original.id
        self.text = original.text
        self.provenance = _restored_scope(original)
        self._hit: MemoryHit | None = None

    def materialize(self) -> MemoryHit:
        """The router-owned copy of the hit (made once), attribution restored, ranking set."""
        if self._hit is None:
            original = self._original
            hit = original.copy(
                provider=self.provider,
                relevance=self.relevance,
                score=self.score,
                created_at=self.created_at,
                tier=self._tier if self._tier is not None else effective_tier(original),
                expires_at=self._expires_at,
                ranking=self.ranking,
            )
            restore_hit(hit)
            self._hit = hit
        return self._hit

    def to_json(self) -> JSONObject:
        """The copy's JSON (only the rare full-content tie-breaks need it)."""
        return self.materialize().to_json()


class _Scope(NamedTuple):
    """The two fields of the restored hit's provenance that ranking reads."""

    scope_type: str
    scope_id: str


def _restored_scope(hit: MemoryHit) -> _Scope:
    # The scope restore_hit will give the copy: fields, then legacy provenance, then the
    # canonical metadata keys; without both type and id it is reported as "unknown".
    scope = hit.scope
    kind, ident = scope.type, scope.id
    if not (kind and ident):
        legacy, get = hit.provenance, hit.metadata.get
        kind = kind or legacy.scope_type.strip() or (get(META_SCOPE_TYPE) or "").strip()
        ident = ident or legacy.scope_id.strip() or (get(META_SCOPE_ID) or "").strip()
        if not (kind and ident):
            return _Scope("unknown", "")
    return _Scope(kind, ident)


def normalized_tiers(tiers: Iterable[str]) -> tuple[str, ...]:
    """Tiers normalized (anything but ``stm`` is ``ltm``), deduplicated, in order."""
    return tuple(dict.fromkeys(normalize_tier(t) for t in tiers))


#: One eligible hit of one provider, as a tuple (built in one step, compared in C):
#: ``(-ranking, -score, ranking, relevance, score, original, created_at, tier, expires_at, provider,
#: recency)``.
#: Only the contenders for the final cut become :class:`Candidate` objects (see :func:`select`).
Entry = tuple[
    float, float, float, float, float, MemoryHit, "datetime | None", "str | None", "datetime | None", str, float
]

_primary = itemgetter(0, 1)
_first = itemgetter(0)
_second = itemgetter(1)
_relevance_of = itemgetter(3)


def eligible_hits(
    name: str, hits: list[MemoryHit], route: Route, policy: SearchPolicy, tiers: tuple[str, ...], now: datetime
) -> list[Entry]:
    """Stamp, filter, score and calibrate one provider's hits (inputs untouched).

    The rules are :mod:`~paxm_core.attribution`'s (expiry, tier) and
    :mod:`~paxm_core.router.ranking`'s (relevance, weight and recency, calibration); the
    result holds :data:`Entry` tuples, so only the hits a recall returns are ever copied.
    """
    limits = _Limits(
        route.effective_weight,
        route.min_relevance or policy.min_relevance,
        route.min_score or policy.min_score,
        policy.recency_boost,
    )
    eligible: list[_Eligible] = []
    for original in hits:
        kept = _eligible(original, limits, tiers, now)
        if kept is not None:
            eligible.append(kept)
    return _ranked(name, within_best(eligible, limits.min_relevance, limits.min_score), limits.weight)


def within_best(eligible: list[_Eligible], min_relevance: float, min_score: float) -> list[_Eligible]:
    """The hits whose relevance and score are within the thresholds' ratio of the provider's best.

    ``min_relevance`` and ``min_score`` are fractions of the best hit's values (each capped at 1,
    so a weighted or recency-boosted best never raises the bar above the plain threshold): a hit
    is kept when ``relevance >= min_relevance * best relevance`` and ``score >= min_score *
    min(1, best score)``, and the most relevant hit is kept.  An absolute number on one
    provider's scale says little about whether the first hit is the right one (a decision
    matched by a third of a long bug report's rare words is still the decision), while a hit far
    below the best one is noise next to it.  With a best hit at 1 this is the absolute cut.

    The best hit itself needs :data:`FIRST_HIT_SHARE` of the plain numbers: below that it is a
    provider's "nothing matched" answer (the SQLite store's newest rows at 0.1 for a query of
    punctuation), and then only the hits clearing the plain numbers stay.
    """
    if not eligible or (min_relevance <= 0 and min_score <= 0):
        return eligible
    top = max(eligible, key=_eligible_relevance)
    if top[1] < min_relevance * FIRST_HIT_SHARE or top[2] < min_score * FIRST_HIT_SHARE:
        return [e for e in eligible if e[1] >= min_relevance and e[2] >= min_score]
    floor_relevance = min_relevance * min(1.0, top[1])
    floor_score = min_score * min(1.0, max(entry[2] for entry in eligible))
    return [e for e in eligible if e is top or (e[1] >= floor_relevance and e[2] >= floor_score)]


#: Share of the plain thresholds the best hit of a provider needs (see :func:`within_best`).
FIRST_HIT_SHARE = 0.5


class _Limits(NamedTuple):
    """One route's weight and thresholds under one policy."""

    weight: float
    min_relevance: float
    min_score: float
    recency_boost: float


#: A hit that passed the filters: ``(original, relevance, score, recency, created_at, tier,
#: expires_at)`` (a plain tuple: one is built per eligible candidate of every provider).
_Eligible = tuple[MemoryHit, float, float, float, "datetime | None", "str | None", "datetime | None"]
_eligible_relevance = itemgetter(1)


def _eligible(original: MemoryHit, limits: _Limits, tiers: tuple[str, ...], now: datetime) -> _Eligible | None:
    """The hit scored, or ``None`` when it is expired or of another tier (thresholds: :func:`within_best`)."""
    expires_at = _expiry(original)
    if expires_at is not None and expires_at <= now:
        return None
    tier: str | None = None  # worked out here only to filter; otherwise when copied
    if tiers:
        tier = effective_tier(original)
        if tier not in tiers:
            return None
    relevance = original.relevance
    if not 0.0 < relevance <= 1.0:  # in (0, 1] it is its own normalized value
        relevance = ranking.normalized_relevance(original)
    created = original.created_at
    if created is not None and created.tzinfo is None:
        created = created.replace(tzinfo=UTC)  # naive timestamps are UTC, like everywhere in paxm
    score = relevance * limits.weight  # weighted, plus the clamped recency
    recency = 0.0
    if limits.recency_boost > 0:  # (without a boost nothing is added: -0.0 stays -0.0)
        recency = ranking.clamp_unit(ranking.recency_score(created, limits.recency_boost, now))
        score += recency
    return (original, relevance, score, recency, created, tier, expires_at)


def _expiry(hit: MemoryHit) -> datetime | None:
    """:func:`~paxm_core.attribution.effective_expires_at`, without parsing metadata that has no expiry key."""
    if hit.expires_at is None and META_EXPIRES_AT not in hit.metadata and "expires_at" not in hit.metadata:
        return None
    return effective_expires_at(hit)


def _ranked(name: str, eligible: list[_Eligible], weight: float) -> list[Entry]:
    """Calibrate within the provider: ``ranking = relevance / rank²``, weighted, plus recency.

    The rank is the hit's place in a stable sort by relevance (equal relevance keeps the
    provider's order; ``reverse`` keeps it too).
    """
    eligible.sort(key=_eligible_relevance, reverse=True)
    entries: list[Entry] = []
    for rank, (original, relevance, score, recency, created, tier, expires_at) in enumerate(eligible, start=1):
        ranked = (relevance / (rank * rank) if relevance > 0 else 0.0) * weight + recency
        entries.append((-ranked, -score, ranked, relevance, score, original, created, tier, expires_at, name, recency))
    return entries


def _candidate(entry: Entry) -> Candidate:
    _, _, ranked, relevance, score, original, created, tier, expires_at, name, _ = entry
    return Candidate(name, original, relevance, score, created, tier, expires_at, ranked)


def finite_keys(routes: Iterable[Route]) -> bool:
    """Whether :func:`eligible_hits` under these routes can only give finite ranking keys.

    It clamps relevance and recency into ``[0, 1]``, so ``ranking`` and ``score`` are finite
    unless a weight is not (an infinite weight times a zero relevance is NaN).
    """
    # The effective weight is the weight when positive, else 1: only a weight of +inf is not finite.
    return all(route.weight != math.inf for route in routes)


def select(entries: list[Entry], limit: int, finite: bool = False) -> list[Candidate]:
    """The merged entries of every provider through :func:`ranking.top` (dedupe, order, cut).

    The candidates are sorted as tuples, and :class:`Candidate` objects are made only for the
    ones the cut's walk reaches (a few out of tens); the result is exactly ``ranking.top`` of
    them all (the same stable order by ``(-ranking, -score)``, the same walk).  ``finite``
    (see :func:`finite_keys`) skips looking for NaN keys that cannot be there.
    """
    if limit <= 0 or len(entries) <= limit:
        return ranking.top([_candidate(entry) for entry in entries], limit)
    if not finite:
        total = sum(map(sum, map(_primary, entries)))  # NaN if any key is (as in ranking.top), summed in C
        if total != total:  # a NaN key has no order: ranking.top's full path decides
            return ranking.top([_candidate(entry) for entry in entries], limit)
    sort_entries(entries)
    return ranking.top_presorted(((_primary(entry), _candidate(entry)) for entry in entries), limit)


def sort_entries(entries: list[Entry]) -> None:
    """Sort in place, stably, by ``(-ranking, -score)`` (no NaN among them: the order is total).

    A stable sort by ``-score`` then one by ``-ranking`` give the stable order by the pair:
    sorting on one number each, ``list.sort`` compares the floats directly, about three times
    as fast as on pairs (a tuple made per entry, compared as tuples).
    """
    entries.sort(key=_second)
    entries.sort(key=_first)
