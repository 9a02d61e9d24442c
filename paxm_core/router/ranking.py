"""Thresholds, calibrated ranking, dedupe and the final order.

Providers' scores mean different things (BM25, cosine similarity, a flat 1.0 for "matched"),
so the router never compares raw magnitudes across providers.  Each provider's eligible hits
get a private ``ranking = relevance / rank²`` (rank within that provider, 1-based), weighted
and boosted for recency; the public ``relevance`` and ``score`` stay what the provider meant.
Everything here is a pure function of the hits, so the merged output cannot depend on the
order in which providers finished.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import datetime
from operator import eq
from typing import Protocol, TypeVar

from paxm_core.api.json import JSONObject
from paxm_core.api.types import MemoryHit

__all__ = [
    "Ranked",
    "Scoped",
    "clamp_unit",
    "dedupe",
    "dedupe_key",
    "normalized_relevance",
    "order_key",
    "recency_score",
    "sort_hits",
    "top",
    "top_presorted",
]

_OLDEST = float("-inf")
_NEWEST_LAST = -_OLDEST  # the order key of a hit without a timestamp


class Scoped(Protocol):
    """The scope dedupe and the final order read (a :class:`Provenance` has it)."""

    @property
    def scope_type(self) -> str: ...
    @property
    def scope_id(self) -> str: ...


class Ranked(Protocol):
    """What calibration, dedupe and the final order read: a :class:`MemoryHit` or a stand-in
    that copies the hit only when it survives (see :class:`~paxm_core.router.pipeline.Candidate`)."""

    ranking: float

    @property
    def provider(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def relevance(self) -> float: ...
    @property
    def score(self) -> float: ...
    @property
    def created_at(self) -> datetime | None: ...
    @property
    def provenance(self) -> Scoped: ...

    def to_json(self) -> JSONObject: ...


H = TypeVar("H", bound=Ranked)


def clamp_unit(value: float) -> float:
    """Clamp to ``[0, 1]``; NaN becomes 0 so a broken provider cannot poison the order."""
    if math.isnan(value) or value < 0:
        return 0.0
    return 1.0 if value > 1 else value


def normalized_relevance(hit: MemoryHit) -> float:
    """``relevance``, or ``score`` when relevance is 0, clamped to ``[0, 1]``."""
    relevance = hit.relevance
    if (relevance == 0 or math.isnan(relevance)) and hit.score > 0:
        relevance = hit.score
    return clamp_unit(relevance)


def recency_score(created_at: datetime | None, boost: float, now: datetime) -> float:
    """``boost / (1 + age_hours / 24)``; 0 without a boost or timestamp; future = full boost."""
    if boost <= 0 or created_at is None:
        return 0.0
    age = (now - created_at).total_seconds()
    if age < 0:
        return boost
    return boost / (1 + age / 3600 / 24)


def _created(hit: Ranked) -> float:
    return hit.created_at.timestamp() if hit.created_at is not None else _OLDEST


def dedupe_key(hit: Ranked) -> str:
    """Scope-qualified normalized text, or provider+id for empty text.

    Identical text in different scopes stays two memories: a personal note and a team note
    with the same words are different facts for different audiences.
    """
    text = hit.text
    if text:
        scope = hit.provenance  # read once: on a Candidate it is a property
        return f"text:{scope.scope_type}:{scope.scope_id}:{' '.join(text.lower().split())}"
    return f"id:{hit.provider}:{hit.id}"


def order_key(hit: Ranked) -> tuple[float, float, float, str, str, str, str, str]:
    """Final order: ranking desc, score desc, newer first, provider asc, id asc.

    Text and scope break the remaining ties so the order is total (upstream stops at id).
    """
    scope = hit.provenance
    created = hit.created_at  # _created, inlined (the order of tied contenders is asked every recall)
    newest = -created.timestamp() if created is not None else _NEWEST_LAST
    return (-hit.ranking, -hit.score, newest, hit.provider, hit.id, hit.text, scope.scope_type, scope.scope_id)


def _winner_key(hit: Ranked) -> tuple[float, float, float, float, str, str]:
    # Dedupe prefers relevance before recency (upstream's rule).
    return (-hit.ranking, -hit.score, -hit.relevance, -_created(hit), hit.provider, hit.id)


def _full(hit: Ranked) -> str:
    # Last-resort tie-break over every serialized field, so that two copies differing only in
    # (say) source or spacing resolve the same way whatever order they arrived in.
    return json.dumps(hit.to_json(), sort_keys=True)


def _better(candidate: Ranked, current: Ranked) -> bool:
    a, b = _winner_key(candidate), _winner_key(current)
    if a != b:
        return a < b
    return _full(candidate) < _full(current)


def dedupe(hits: Iterable[H]) -> list[H]:
    """Keep the best hit per :func:`dedupe_key`, deterministically."""
    best: dict[str, H] = {}
    for hit in hits:
        key = dedupe_key(hit)
        current = best.get(key)
        if current is None or _better(hit, current):
            best[key] = hit
    return list(best.values())


def sort_hits(hits: list[H]) -> None:
    """Sort in place into the final order (:func:`order_key`), total over all fields."""
    keys = list(map(order_key, hits))
    order = sorted(range(len(hits)), key=keys.__getitem__)
    sorted_keys = list(map(keys.__getitem__, order))
    # Equal keys are rare (same provider, id, text and scope); when no two neighbours are
    # equal there is nothing to settle (looked for in C, not by walking the runs in Python).
    if not any(map(eq, sorted_keys, sorted_keys[1:])):
        hits[:] = list(map(hits.__getitem__, order))
        return
    ordered = [hits[i] for i in order]
    # Settle equal keys by full content.
    start = 0
    while start < len(ordered):
        end = start + 1
        while end < len(ordered) and sorted_keys[end] == sorted_keys[start]:
            end += 1
        if end - start > 1:
            ordered[start:end] = sorted(ordered[start:end], key=_full)
        start = end
    hits[:] = ordered


def top(hits: list[H], limit: int) -> list[H]:
    """``dedupe`` then ``sort_hits`` then the first ``limit`` (``<= 0`` = all), cheaply.

    A recall keeps a few hits out of tens of candidates, so dedupe keys and full order keys
    are computed only for the candidates that can still make the cut.  Both the dedupe winner
    rule and the final order start with ``(-ranking, -score)``: walking the candidates in that
    order, once ``limit`` distinct dedupe groups are seen, a later candidate either belongs to
    a group already seen (and loses to its first member, which is strictly ahead of it) or
    starts a group whose best member is strictly behind the ``limit``-th group.  The result is
    exactly what the full dedupe and sort give.
    """
    if limit <= 0 or len(hits) <= limit:
        kept = dedupe(hits)
        sort_hits(kept)
        return kept[:limit] if limit > 0 else kept
    primaries = [(-h.ranking, -h.score) for h in hits]
    total = sum(map(sum, primaries))  # NaN if any key is NaN (or infinities of both signs)
    if total != total:  # NaN has no order: take the full path
        kept = dedupe(hits)
        sort_hits(kept)
        return kept[:limit]
    order = sorted(range(len(hits)), key=primaries.__getitem__)
    return top_presorted(((primaries[index], hits[index]) for index in order), limit)


def top_presorted(ordered: Iterable[tuple[tuple[float, float], H]], limit: int) -> list[H]:
    """:func:`top`'s walk over ``(primary, hit)`` pairs already in stable ``primary`` order.

    ``primary`` is ``(-ranking, -score)`` of ``hit``, no NaN in it, and ``limit > 0``.  The
    pairs are consumed lazily and the walk stops at the cut, so a caller can build its hits
    on demand (the router makes :class:`~paxm_core.router.pipeline.Candidate` objects only
    for the contenders).  See :func:`top` for why the result is the full dedupe and sort's.
    """
    best: dict[str, H] = {}  # dedupe, as :func:`dedupe`, over the contenders only
    boundary: tuple[float, float] | None = None
    # The groups' primaries in the order the groups were first seen.  A group's winner is only
    # ever replaced by a later hit that is _better, i.e. one with the same primary (the walk
    # never goes back), so the kept hits' primaries are these and never decrease.  When they
    # strictly increase, the full order (order_key starts with the primary) is already the
    # walk's order and sorting would change nothing.
    strictly_increasing = True
    last: tuple[float, float] | None = None
    for primary, hit in ordered:
        if boundary is not None and primary > boundary:
            break
        key = dedupe_key(hit)
        current = best.get(key)
        if current is None:
            best[key] = hit
            if last is not None and not primary > last:
                strictly_increasing = False
            last = primary
            if len(best) == limit:
                boundary = primary
        elif _better(hit, current):
            best[key] = hit
    kept = list(best.values())
    if not strictly_increasing:
        sort_hits(kept)
    return kept[:limit]
