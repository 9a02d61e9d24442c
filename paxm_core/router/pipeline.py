"""One provider's hits through expiry, tier, thresholds, weighting, attribution and calibration."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any, NamedTuple, TypeVar

from paxm_core.attribution import (
    META_AGENT_ID,
    META_SCOPE_ID,
    META_SCOPE_TYPE,
    META_SESSION_ID,
    META_TIER,
    META_TURN_ID,
    META_USER_ID,
    effective_expires_at,
    effective_tier,
)
from paxm_core.router import ranking
from paxm_core.router.policy import Route, SearchPolicy
from paxm_core.types import TIER_LTM, MemoryHit, MemoryOrigin, MemoryScope, Provenance, normalize_tier

__all__ = ["Candidate", "Entry", "eligible_hits", "finite_keys", "normalized_tiers", "select", "sort_entries"]


class Candidate:
    """A provider's hit that passed the filters, scored and ranked but not yet copied.

    A recall keeps a few hits out of tens of candidates, and copying a hit (and restoring its
    attribution) is most of the router's own cost, so the copy is made by :meth:`materialize`
    only for the hits that survive dedupe and the final cut.  Candidates are made only for the
    contenders the cut's walk reaches, and every one of them is read by dedupe and the final
    order, so what those read (``id``, ``text`` and the ``provenance`` the restored hit will
    have) is plain attributes, set once here.
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
        # The scope the restored copy will have (the only part of it dedupe and order read).
        self.provenance = _restored_scope(original)
        self._hit: MemoryHit | None = None

    def materialize(self) -> MemoryHit:
        """The router-owned copy of the hit (made once), attribution restored, ranking set."""
        hit = self._hit
        if hit is None:
            original = self._original
            # attribution.restore_hit, inlined: the restored scope is the provenance pair dedupe
            # already worked out, so only the origin is merged here, and the copy is built with
            # its final attribution instead of being patched after.  The attribution objects
            # are frozen values, so equal ones are shared (see _shared) instead of built per hit.
            origin, scope = original.origin, original.scope
            if not (origin.user_id and origin.agent_id and origin.session_id and origin.turn_id):
                legacy, get = original.provenance, original.metadata.get
                key = (
                    origin.user_id or legacy.user_id.strip() or (get(META_USER_ID) or "").strip(),
                    origin.agent_id or legacy.agent_id.strip() or (get(META_AGENT_ID) or "").strip(),
                    origin.session_id or (get(META_SESSION_ID) or "").strip(),
                    origin.turn_id or (get(META_TURN_ID) or "").strip(),
                )
                origin = _ORIGINS.get(key) or _shared(_ORIGINS, key, MemoryOrigin(*key))
            restored = self.provenance
            if not (scope.type and scope.id):
                pair = (restored.scope_type, restored.scope_id)
                scope = _SCOPES.get(pair) or _shared(_SCOPES, pair, MemoryScope(*pair))
            attribution = (origin.user_id, origin.agent_id, scope.type, scope.id)
            provenance = _PROVENANCES.get(attribution) or _shared(_PROVENANCES, attribution, Provenance(*attribution))
            tier = self._tier
            if tier is None:  # attribution.effective_tier, inlined
                tier = original.tier
                if tier:
                    tier = normalize_tier(tier)
                else:
                    tier = (original.metadata.get(META_TIER) or "").strip()
                    tier = normalize_tier(tier) if tier else TIER_LTM
            hit = self._hit = MemoryHit(
                self.provider,
                original.id,
                original.text,
                self.relevance,
                self.score,
                original.raw_score,
                original.raw_score_kind,
                original.source,
                dict(original.metadata),
                self.created_at,
                tier,
                self._expires_at,
                origin,
                scope,
                provenance,
                self.ranking,
            )
        return hit

    def to_json(self) -> dict[str, Any]:
        """The copy's JSON (only the rare full-content tie-breaks need it)."""
        return self.materialize().to_json()


class _Scope:
    """The two fields of the restored hit's provenance that ranking reads (a plain pair:
    building the frozen ``Provenance`` costs more than the whole dedupe key)."""

    __slots__ = ("scope_id", "scope_type")

    def __init__(self, scope_type: str, scope_id: str) -> None:
        self.scope_type = scope_type
        self.scope_id = scope_id


#: Frozen attribution values by their fields, shared by the copies that have them (a recall's
#: hits nearly always carry one user's, one scope's).  Building one runs a frozen ``__init__``
#: (a checked ``object.__setattr__`` per field), about three times a lookup here.
_ORIGINS: dict[tuple[str, str, str, str], MemoryOrigin] = {}
_SCOPES: dict[tuple[str, str], MemoryScope] = {}
_PROVENANCES: dict[tuple[str, str, str, str], Provenance] = {}
#: Entries per table before it is emptied (a bound on memory, not an eviction policy: a table
#: refills with what recalls use within a few recalls).
_SHARED_MAX = 1024

K = TypeVar("K")
V = TypeVar("V")


def _shared(table: dict[K, V], key: K, value: V) -> V:
    # Only called on a miss; a race between two threads stores one of two equal values.
    if len(table) >= _SHARED_MAX:
        table.clear()
    table[key] = value
    return value


def _restored_scope(hit: MemoryHit) -> _Scope:
    # The scope restore_hit will give the copy: fields, then legacy provenance, then the
    # canonical metadata keys; without both type and id it is reported as "unknown".  The
    # pairs are never changed once made, so equal ones are shared, as the frozen values are.
    scope = hit.scope
    kind, ident = scope.type, scope.id
    if not (kind and ident):
        legacy, get = hit.provenance, hit.metadata.get
        kind = kind or legacy.scope_type.strip() or (get(META_SCOPE_TYPE) or "").strip()
        ident = ident or legacy.scope_id.strip() or (get(META_SCOPE_ID) or "").strip()
        if not (kind and ident):
            return _UNKNOWN_SCOPE
    pair = (kind, ident)
    return _PAIRS.get(pair) or _shared(_PAIRS, pair, _Scope(kind, ident))


_UNKNOWN_SCOPE = _Scope("unknown", "")
_PAIRS: dict[tuple[str, str], _Scope] = {}


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


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
    return _ranked(name, eligible, limits.weight)


class _Limits(NamedTuple):
    """One route's weight and thresholds under one policy."""

    weight: float
    min_relevance: float
    min_score: float
    recency_boost: float


class _Eligible(NamedTuple):
    """A hit that passed the filters, with what its entry needs."""

    original: MemoryHit
    relevance: float
    score: float
    recency: float
    created_at: datetime | None
    tier: str | None
    expires_at: datetime | None


def _eligible(original: MemoryHit, limits: _Limits, tiers: tuple[str, ...], now: datetime) -> _Eligible | None:
    """The hit scored, or ``None`` when it is expired, of another tier or under a threshold."""
    expires_at = effective_expires_at(original)
    if expires_at is not None and expires_at <= now:
        return None
    tier: str | None = None  # worked out here only to filter; otherwise when copied
    if tiers:
        tier = effective_tier(original)
        if tier not in tiers:
            return None
    relevance = ranking.normalized_relevance(original)
    if relevance < limits.min_relevance:
        return None
    created = original.created_at
    if created is not None and created.tzinfo is None:
        created = created.replace(tzinfo=UTC)  # naive timestamps are UTC, like everywhere in paxm
    score = relevance * limits.weight  # ranking.apply_weight_and_recency
    recency = 0.0
    if limits.recency_boost > 0:  # (without a boost nothing is added: -0.0 stays -0.0)
        recency = ranking.clamp_unit(ranking.recency_score(created, limits.recency_boost, now))
        score += recency
    if score < limits.min_score:
        return None
    return _Eligible(original, relevance, score, recency, created, tier, expires_at)


def _ranked(name: str, eligible: list[_Eligible], weight: float) -> list[Entry]:
    """Calibrate within the provider: ``ranking = relevance / rank²``, weighted, plus recency.

    The rank is the hit's place in a stable sort by relevance (equal relevance keeps the
    provider's order; ``reverse`` keeps it too).
    """
    ordered = sorted(eligible, key=_relevance_of_eligible, reverse=True)
    entries: list[Entry] = []
    for rank, hit in enumerate(ordered, start=1):
        calibrated = hit.relevance / (rank * rank) if hit.relevance > 0 else 0.0
        ranked = calibrated * weight + hit.recency
        entries.append(
            (
                -ranked,
                -hit.score,
                ranked,
                hit.relevance,
                hit.score,
                hit.original,
                hit.created_at,
                hit.tier,
                hit.expires_at,
                name,
                hit.recency,
            )
        )
    return entries


def _relevance_of_eligible(hit: _Eligible) -> float:
    return hit.relevance


def _candidate(entry: Entry) -> Candidate:
    _, _, ranked, relevance, score, original, created, tier, expires_at, name, _ = entry
    return Candidate(name, original, relevance, score, created, tier, expires_at, ranked)


def finite_keys(routes: Iterable[Route]) -> bool:
    """Whether :func:`eligible_hits` under these routes can only give finite ranking keys.

    It clamps relevance and recency into ``[0, 1]``, so ``ranking`` and ``score`` are finite
    unless a weight is not (an infinite weight times a zero relevance is NaN).
    """
    # The effective weight is the weight when positive, else 1: only a weight of +inf is not finite.
    for route in routes:
        if route.weight == math.inf:
            return False
    return True


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
