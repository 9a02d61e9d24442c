"""Translate between paxm items/hits and Zep v4 objects (no network here)."""

from __future__ import annotations

import math
from typing import Any

from paxm_core import MemoryHit, MemoryItem, format_time, normalize_tier
from paxm_core.http_client import json_text, remote_hit, time_or_none

__all__ = ["episode_metadata", "hit_from_result", "normalize_relevance", "SCOPES"]

#: config ``search_scope`` -> (SDK search method name, hit kind).  ``auto`` uses graph context.
SCOPES = {
    "episodes": ("search_episodes", "episode"),
    "edges": ("search_edges", "edge"),
    "nodes": ("search_nodes", "node"),
    "observations": ("search_observations", "observation"),
    "thread_summaries": ("search_thread_summaries", "thread_summary"),
    "auto": ("get_context", "context"),
}

#: Zep accepts at most ten metadata keys per episode; these go first, in this order.
_PRIORITY_KEYS = (
    "paxm_id",
    "paxm_tier",
    "paxm_expires_at",
    "sequence",
    "paxm_user_id",
    "paxm_agent_id",
    "paxm_session_id",
    "paxm_turn_id",
    "paxm_scope_type",
    "paxm_scope_id",
    "paxm_source",
)
MAX_METADATA_KEYS = 10


def episode_metadata(item: MemoryItem) -> dict[str, str]:
    """paxm's canonical metadata for one episode, capped at Zep's ten keys in priority order.

    Identity, tier, expiry and sequence come first because the router filters and restores
    attribution from them; the source also travels as the episode's ``source_description``.
    """
    values: dict[str, str] = dict(item.metadata)
    values["paxm_id"] = item.id
    values["paxm_source"] = item.source
    values["paxm_tier"] = normalize_tier(item.tier)
    if item.expires_at is not None:
        values["paxm_expires_at"] = format_time(item.expires_at)
    for key, value in (
        ("paxm_user_id", item.origin.user_id),
        ("paxm_agent_id", item.origin.agent_id),
        ("paxm_session_id", item.origin.session_id),
        ("paxm_turn_id", item.origin.turn_id),
        ("paxm_scope_type", item.scope.type),
        ("paxm_scope_id", item.scope.id),
    ):
        if value and not values.get(key):
            values[key] = value
    out: dict[str, str] = {}
    ordered = [k for k in _PRIORITY_KEYS] + sorted(k for k in values if k not in _PRIORITY_KEYS)
    for key in ordered:
        value = values.get(key, "")
        if key.strip() and value and value.strip() and len(out) < MAX_METADATA_KEYS:
            out[key] = value
    return out


def normalize_relevance(relevance: float | None, score: float | None) -> tuple[float, float | None, str]:
    """Map Zep's relevance/score to paxm's higher-is-better ``[0, 1]`` plus the raw value and its kind.

    ``relevance`` (a reranker probability) wins; otherwise a score already in ``[0, 1]`` is
    used as is, a score above 1 is a rank-style score mapped through ``1 / (1 + s)``, and a
    negative one is 0.  No score at all means Zep chose the hit without scoring it.
    """
    if relevance is not None and math.isfinite(relevance):
        raw = score if score is not None and math.isfinite(score) else relevance
        return min(1.0, max(0.0, relevance)), raw, "zep_relevance"
    if score is not None and math.isfinite(score):
        if 0.0 <= score <= 1.0:
            return score, score, "zep_score"
        if score > 1.0:
            return 1.0 / (1.0 + score), score, "zep_rank_score"
        return 0.0, score, "zep_score"
    return 1.0, None, "zep_unscored"


def _string_map(values: Any) -> dict[str, str]:
    if not isinstance(values, dict):
        return {}
    return {str(k): json_text(v) for k, v in values.items() if str(k).strip() and v is not None}


def _get(obj: Any, name: str) -> Any:
    return getattr(obj, name, None)


#: the result's own fields kept in a hit's metadata, by hit kind
_EXTRA_FIELDS = {
    "episode": (
        ("processed", "zep_processed"),
        ("source", "zep_source"),
        ("source_description", "zep_source_description"),
    ),
    "edge": (
        ("name", "zep_edge_name"),
        ("source_node_uuid", "zep_source_node_uuid"),
        ("target_node_uuid", "zep_target_node_uuid"),
    ),
}


def _text_of(kind: str, obj: Any) -> str:
    if kind == "episode":
        return str(_get(obj, "content") or "").strip()
    if kind == "edge":
        return str(_get(obj, "fact") or _get(obj, "name") or "").strip()
    if kind == "thread_summary":
        return str(_get(obj, "summary") or "").strip()
    name = str(_get(obj, "name") or "").strip()
    summary = str(_get(obj, "summary") or "").strip()
    return "\n".join(part for part in (name, summary) if part)


def hit_from_result(provider: str, kind: str, obj: Any, max_characters: int = 0) -> MemoryHit | None:
    """One Zep search result as a paxm hit, or ``None`` when it has no id or no text."""
    uuid = str(_get(obj, "uuid_") or "").strip()
    text = _text_of(kind, obj)
    if not uuid or not text:
        return None
    if max_characters > 0 and len(text) > max_characters:
        text = text[:max_characters]
    relevance, raw, raw_kind = normalize_relevance(_get(obj, "relevance"), _get(obj, "score"))
    metadata = _string_map(_get(obj, "metadata") if kind == "episode" else _get(obj, "attributes"))
    metadata["zep_type"] = kind
    for field, key in _EXTRA_FIELDS.get(kind, ()):
        value = _get(obj, field)
        if value is not None and value != "":
            metadata[key] = json_text(value)
    labels = _get(obj, "labels")
    if labels:
        metadata["zep_labels"] = ",".join(str(label) for label in labels)
    episodes = _get(obj, "episode_uuids")
    if episodes:
        metadata["zep_episode_uuids"] = ",".join(str(e) for e in episodes)
    return remote_hit(
        provider,
        uuid,
        text,
        metadata,
        relevance=relevance,
        raw_score=raw,
        raw_score_kind=raw_kind,
        source=f"zep:{kind}",
        created_at=time_or_none(_get(obj, "created_at")),
    )  # origin/scope from the canonical paxm_* keys
