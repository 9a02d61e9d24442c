"""paxm items/hits <-> Mem0 JSON: paxm's canonical keys travel in Mem0's ``metadata`` object;
Mem0's ``user_id``/``agent_id``/``run_id`` are the provider's target, never item metadata.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from paxm_core import MemoryHit, MemoryItem, SearchQuery, normalize_tier
from paxm_core.http_client import json_text, remote_hit, stored_metadata, time_or_none

__all__ = [
    "SCOPE_KEYS",
    "SCORE_SEMANTICS",
    "hit_from_result",
    "item_metadata",
    "normalize_score",
    "result_objects",
    "search_metadata_filters",
]

#: Mem0's entity keys; the configured target, so never copied from item metadata or filters.
SCOPE_KEYS = ("user_id", "agent_id", "run_id")
SCORE_SEMANTICS = ("similarity", "distance")

#: The result's own fields kept in a hit's metadata (as ``mem0_<field>``).
_EXTRA_FIELDS = ("event", "user_id", "agent_id", "run_id", "hash", "updated_at", "expiration_date")
#: A pgvector cosine distance lies in [0, 2].
_COSINE_DISTANCE_MAX = 2.0


def item_metadata(item: MemoryItem) -> dict[str, str]:
    """The metadata object stored with one memory: caller metadata plus paxm's canonical keys."""
    meta = {k: v.strip() for k, v in stored_metadata(item).items() if k.strip() and k not in SCOPE_KEYS and v.strip()}
    meta.setdefault("paxm_tier", normalize_tier(item.tier))
    return meta


def search_metadata_filters(query: SearchQuery) -> dict[str, str]:
    """Caller-explicit filters plus ``paxm_tier`` when exactly one tier is wanted.

    ``query.metadata`` is runtime context and never becomes a filter.
    """
    out: dict[str, str] = {}
    for key in sorted(query.filters):
        value = query.filters[key]
        if key in SCOPE_KEYS or not key.strip() or not str(value).strip():
            continue
        out[key] = str(value).strip()
    tiers = {normalize_tier(t) for t in query.tiers if t.strip()}
    if len(tiers) == 1:
        out["paxm_tier"] = tiers.pop()
    return out


def normalize_score(raw: float, semantics: str) -> float:
    """Map Mem0's score to paxm's higher-is-better ``[0, 1]``.

    ``similarity``: a value in ``[0, 1]`` is kept, a negative one is 0, one above 1 (a
    store that reports something unbounded) goes through ``1 / (1 + s)`` as upstream does.
    ``distance``: a cosine distance in ``[0, 2]`` (pgvector) becomes ``1 - d / 2``.
    """
    if not math.isfinite(raw):
        return 0.0
    if semantics == "distance":
        if raw >= _COSINE_DISTANCE_MAX:
            return 0.0
        if raw <= 0:
            return 1.0
        return 1.0 - raw / _COSINE_DISTANCE_MAX
    if raw < 0:
        return 0.0
    if raw <= 1:
        return raw
    return 1.0 / (1.0 + raw)


def result_objects(value: Any) -> list[dict[str, Any]]:
    """The memory objects of a response: ``{"results": [...]}``, ``{"result": ...}``, a list or one object."""
    if isinstance(value, dict):
        for key in ("results", "result"):
            if key in value:
                return result_objects(value[key])
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def field(obj: Mapping[str, Any], *keys: str) -> str:
    """The first non-empty of ``keys`` in ``obj`` as text."""
    for key in keys:
        text = json_text(obj.get(key)).strip()
        if text:
            return text
    return ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def hit_from_result(
    provider: str, obj: Mapping[str, Any], *, semantics: str, kind_prefix: str, source: str
) -> MemoryHit | None:
    """One Mem0 result as a paxm hit (``None`` without an id or text).

    ``raw_score`` keeps Mem0's value and ``raw_score_kind`` says how it was read
    (``mem0_similarity``, ``mem0_distance``, ``mem0_cloud_similarity`` ...); a result without a
    score was chosen unscored and gets relevance 1 (``<prefix>_unscored``).
    """
    memory_id = field(obj, "id", "memory_id", "uuid")
    text = field(obj, "memory", "data", "text", "content")
    if not memory_id or not text:
        return None
    raw: float | None = None
    for key in ("score", "relevance", "similarity"):
        raw = _number(obj.get(key))
        if raw is not None and math.isfinite(raw):
            break
        raw = None
    if raw is None:
        relevance, kind = 1.0, f"{kind_prefix}_unscored"
    else:
        # Mem0's vector stores score in float32: digits past the sixth are noise that differs
        # between two identical searches, so they are dropped (raw_score keeps the value as sent)
        relevance, kind = round(normalize_score(raw, semantics), 6), f"{kind_prefix}_{semantics}"
    metadata: dict[str, str] = {}
    nested = obj.get("metadata")
    if isinstance(nested, dict):
        for key in sorted(nested):
            value = json_text(nested[key]).strip()
            if str(key).strip() and value:
                metadata[str(key)] = value
    for key in _EXTRA_FIELDS:
        value = field(obj, key)
        if value:
            metadata[f"mem0_{key}"] = value
    if "score_details" in obj and obj["score_details"] is not None:
        metadata["mem0_score_details"] = json.dumps(obj["score_details"], sort_keys=True, default=str)
    created = time_or_none(field(obj, "created_at", "createdAt")) or time_or_none(metadata.get("paxm_created_at"))
    return remote_hit(
        provider,
        memory_id,
        text,
        metadata,
        relevance=relevance,
        raw_score=raw,
        raw_score_kind=kind,
        source=source,
        created_at=created,
    )
