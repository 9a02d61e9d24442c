"""One provider's hits through expiry, tier, thresholds, weighting, attribution and calibration."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

from paxm_core.attribution import (
    META_AGENT_ID,
    META_EXPIRES_AT,
    META_SCOPE_ID,
    META_SCOPE_TYPE,
    META_SESSION_ID,
    META_TURN_ID,
    META_USER_ID,
    effective_expires_at,
    effective_tier,
)
from paxm_core.router import ranking
from paxm_core.router.policy import Route, SearchPolicy
from paxm_core.types import MemoryHit, MemoryOrigin, MemoryScope, Provenance, normalize_tier

__all__ = ["Candidate", "Entry", "eligible_hits", "finite_keys", "normalized_tiers", "select"]


class Candidate:
    """A provider's hit that passed the filters, scored and ranked but not yet copied.

    A recall keeps a few hits out of tens of candidates, and copying a hit (and restoring its
    attribution) is most of the router's own cost, so the copy is made by :meth:`materialize`
    only for the hits that survive dedupe and the final cut.  Until then this carries what
    ranking reads; what only dedupe and the final order read (the ``provenance`` the restored
    hit will have) is worked out on first use, which in a recall is for the few candidates
    that can still make the cut.
    """

    __slots__ = (
        "_expires_at",
        "_hit",
        "_original",
        "_provenance",
        "_tier",
        "created_at",
        "provider",
        "ranking",
        "relevance",
        "score",
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
    ) -> None:
        self.provider = provider
        self.relevance = relevance
        self.score = score
        self.ranking = 0.0
        self._original = original
        self._tier = tier
        self._expires_at = expires_at
        self.created_at = created_at
        self._provenance: _Scope | None = None
        self._hit: MemoryHit | None = None

    @property
    def id(self) -> str:
        return self._original.id

    @property
    def text(self) -> str:
        return self._original.text

    @property
    def provenance(self) -> _Scope:
        """The scope the restored copy will have (the only part of it dedupe and order read)."""
        provenance = self._provenance
        if provenance is None:
            provenance = self._provenance = _Scope(*_restored_scope(self._original))
        return provenance

    def materialize(self) -> MemoryHit:
        """The router-owned copy of the hit (made once), attribution restored, ranking set."""
        if self._hit is None:
            original = self._original
            # attribution.restore_hit, inlined: the restored scope is the provenance pair dedupe
            # already worked out, so only the origin is merged here, and the copy is built with
            # its final attribution instead of being patched after.
            origin, scope, legacy = original.origin, original.scope, original.provenance
            metadata = original.metadata
            if not (origin.user_id and origin.agent_id and origin.session_id and origin.turn_id):
                get = metadata.get
                origin = MemoryOrigin(
                    origin.user_id or legacy.user_id.strip() or (get(META_USER_ID) or "").strip(),
                    origin.agent_id or legacy.agent_id.strip() or (get(META_AGENT_ID) or "").strip(),
                    origin.session_id or (get(META_SESSION_ID) or "").strip(),
                    origin.turn_id or (get(META_TURN_ID) or "").strip(),
                )
            restored = self.provenance
            if not (scope.type and scope.id):
                scope = MemoryScope(restored.scope_type, restored.scope_id)
            hit = MemoryHit(
                self.provider,
                original.id,
                original.text,
                self.relevance,
                self.score,
                original.raw_score,
                original.raw_score_kind,
                original.source,
                dict(metadata),
                self.created_at,
                effective_tier(original) if self._tier is None else self._tier,
                self._expires_at,
                origin,
                scope,
                Provenance(origin.user_id, origin.agent_id, scope.type, scope.id),
                self.ranking,
            )
            self._hit = hit
        return self._hit

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


#: One eligible hit of one provider, as a tuple (built in one step, compared in C):
#: ``(-ranking, -score, ranking, relevance, score, original, created_at, tier, expires_at, provider,
#: recency)``.
#: Only the contenders for the final cut become :class:`Candidate` objects (see :func:`select`).
Entry = tuple[
    float, float, float, float, float, MemoryHit, "datetime | None", "str | None", "datetime | None", str, float
]

_primary = itemgetter(0, 1)
_relevance_of = itemgetter(3)


def eligible_hits(
    name: str, hits: list[MemoryHit], route: Route, policy: SearchPolicy, tiers: tuple[str, ...], now: datetime
) -> list[Entry]:
    """Stamp, filter, score and calibrate one provider's hits (inputs untouched).

    Filters run on the provider's own objects and the result holds :data:`Entry` tuples, so
    that only the hits a recall returns are ever copied.  This is the router's hottest loop
    (every candidate of every provider passes through it), so the rules of
    :mod:`~paxm_core.attribution` and :mod:`~paxm_core.router.ranking` are applied here with
    their common cases inlined (a hit without an expiry field or expiry metadata), and what
    only the survivors need is left to :class:`Candidate`.
    """
    weight = route.effective_weight
    min_relevance = route.min_relevance or policy.min_relevance
    min_score = route.min_score or policy.min_score
    boost = policy.recency_boost
    entries: list[Entry] = []
    append = entries.append
    # Providers nearly always answer in relevance order; then a hit's rank is known as it is
    # kept, and calibration needs no second pass (see the fallback below for the others).
    in_order = True
    previous = math.inf
    for original in hits:
        expires_at = original.expires_at
        if expires_at is not None:
            if expires_at.tzinfo is None:
                expires_at = expires_at.replace(tzinfo=UTC)
            if expires_at <= now:
                continue
        else:
            metadata = original.metadata
            if META_EXPIRES_AT in metadata or "expires_at" in metadata:
                expires_at = effective_expires_at(original)
                if expires_at is not None and expires_at <= now:
                    continue
        tier: str | None = None  # worked out here only to filter; otherwise when copied
        if tiers:
            tier = effective_tier(original)
            if tier not in tiers:
                continue
        # ranking.normalized_relevance, inlined
        relevance = original.relevance
        if (relevance == 0 or relevance != relevance) and original.score > 0:
            relevance = original.score
        if relevance != relevance or relevance < 0:
            relevance = 0.0
        elif relevance > 1:
            relevance = 1.0
        if relevance < min_relevance:
            continue
        created = original.created_at
        if created is not None and created.tzinfo is None:
            created = created.replace(tzinfo=UTC)  # naive timestamps are UTC, like everywhere in paxm
        if boost > 0:
            recency = ranking.clamp_unit(ranking.recency_score(created, boost, now))
            score = relevance * weight + recency  # ranking.apply_weight_and_recency
        else:
            recency = 0.0
            score = relevance * weight
        if score < min_score:
            continue
        # ranking.calibrate, then weight and recency: ranking = relevance / rank², weighted,
        # plus recency, rank within this provider by relevance (equal relevance: its order)
        if relevance > previous:
            in_order = False
        previous = relevance
        rank = len(entries) + 1
        ranked = (relevance / (rank * rank) if relevance > 0 else 0.0) * weight + recency
        append((-ranked, -score, ranked, relevance, score, original, created, tier, expires_at, name, recency))
    if not in_order:
        # A stable sort by relevance (``reverse`` keeps equal relevance in the provider's
        # order), then the ranks again.
        entries.sort(key=_relevance_of, reverse=True)
        for index, entry in enumerate(entries):
            _, _, _, relevance, score, original, created, tier, expires_at, _, recency = entry
            rank = index + 1
            ranked = (relevance / (rank * rank) if relevance > 0 else 0.0) * weight + recency
            entries[index] = (
                -ranked,
                -score,
                ranked,
                relevance,
                score,
                original,
                created,
                tier,
                expires_at,
                name,
                recency,
            )
    return entries


def _candidate(entry: Entry) -> Candidate:
    _, _, ranked, relevance, score, original, created, tier, expires_at, name, _ = entry
    candidate = Candidate(name, original, relevance, score, created, tier, expires_at)
    candidate.ranking = ranked
    return candidate


def finite_keys(routes: Iterable[Route]) -> bool:
    """Whether :func:`eligible_hits` under these routes can only give finite ranking keys.

    It clamps relevance and recency into ``[0, 1]``, so ``ranking`` and ``score`` are finite
    unless a weight is not (an infinite weight times a zero relevance is NaN).
    """
    return all(map(math.isfinite, (route.effective_weight for route in routes)))


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
    entries.sort(key=_primary)
    return ranking.top_presorted(((_primary(entry), _candidate(entry)) for entry in entries), limit)
