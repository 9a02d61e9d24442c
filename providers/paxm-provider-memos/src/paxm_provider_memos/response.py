"""MemOS search responses (self-hosted and Cloud, in every shape they have had) as paxm hits."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from paxm_core import MemoryHit, parse_time
from paxm_core.http_client import json_text, remote_hit

__all__ = ["hits_from_response", "iter_memories", "memory_ids", "strip_role_prefix"]

_LIST_KEYS = ("memory_detail_list", "memories", "results")
_TEXT_KEYS = ("memory_value", "memory", "text", "content")
_ID_KEYS = ("memory_id", "id", "node_id")
_SCORE_KEYS = ("relativity", "score", "similarity")
_TIME_KEYS = ("update_time", "create_time", "created_at", "updated_at")
# the product server stores a fast-mode message as "<role>: [<timestamp>]: <text>\n"
_ROLE_PREFIX = re.compile(r"^(?:user|assistant|system): \[[^\]\n]{1,80}\]: ", re.S)


def strip_role_prefix(text: str) -> str:
    """The written text, without the ``user: [time]: `` prefix MemOS adds in fast mode."""
    stripped = _ROLE_PREFIX.sub("", text, count=1)
    return stripped[:-1] if stripped != text and stripped.endswith("\n") else stripped


def iter_memories(data: Any) -> Iterator[Mapping[str, Any]]:
    """Every memory object in a response ``data`` value, in server order."""
    if isinstance(data, list):
        for entry in data:
            if isinstance(entry, Mapping):
                if isinstance(entry.get("memories"), list):  # text_mem[] bucket
                    yield from iter_memories(entry["memories"])
                else:
                    yield entry
        return
    if not isinstance(data, Mapping):
        return
    for key in _LIST_KEYS:
        if isinstance(data.get(key), list):
            yield from iter_memories(data[key])
            return
    if isinstance(data.get("text_mem"), list):
        yield from iter_memories(data["text_mem"])


def memory_ids(value: Any) -> list[str]:
    """Every ``memory_id``/``id``/``message_id``/``task_id`` in an add response, depth first."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for key in ("memory_id", "id", "message_id", "task_id"):
                value = node.get(key)
                if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
                    found.append(str(value))
                    break
            else:
                for child in node.values():
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(value)
    return found


def _first(obj: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = obj.get(key)
        if value not in (None, ""):
            return value
    return None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _score(obj: Mapping[str, Any]) -> float | None:
    meta = _meta(obj)
    for source in (obj, meta):
        for key in _SCORE_KEYS:
            value = source.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                return float(value)
    return None


def _created(obj: Mapping[str, Any]) -> datetime | None:
    meta = _meta(obj)
    for source in (obj, meta):
        value = _first(source, _TIME_KEYS)
        if isinstance(value, str):
            try:
                return parse_time(value)
            except ValueError:
                try:
                    return datetime.strptime(value, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
                except ValueError:
                    continue
    return None


def _string_map(value: Any) -> dict[str, str]:
    return {str(k): json_text(v) for k, v in value.items() if v is not None} if isinstance(value, Mapping) else {}


def _hit(provider: str, kind_prefix: str, obj: Mapping[str, Any]) -> MemoryHit | None:
    raw_text = _first(obj, _TEXT_KEYS)
    if not isinstance(raw_text, str) or not raw_text.strip():
        return None
    meta = _meta(obj)
    # paxm's own keys travel in ``info`` (self-hosted nests it in metadata; Cloud may flatten it)
    metadata = _string_map(meta.get("info") or obj.get("info") or meta.get("metadata") or obj.get("metadata_info"))
    if not metadata and isinstance(obj.get("metadata"), Mapping):
        metadata = {k: v for k, v in _string_map(obj["metadata"]).items() if k.startswith("paxm_")}
    for key in ("memory_type", "cube_id", "status", "memory_key"):
        value = obj.get(key) or meta.get(key)
        if isinstance(value, str) and value:
            metadata.setdefault(f"memos_{key}", value)
    raw = _score(obj)
    if raw is None:
        relevance, kind = 1.0, f"{kind_prefix}_unscored"
    else:
        relevance, kind = min(1.0, max(0.0, raw)), f"{kind_prefix}_relativity"
    hit_id = _first(obj, _ID_KEYS)
    hit_id = str(hit_id) if hit_id is not None else os.urandom(16).hex()  # a fresh id for a hit without one
    text = strip_role_prefix(raw_text)
    source = metadata.get("paxm_source", "")
    return remote_hit(
        provider,
        hit_id,
        text,
        metadata,
        relevance=relevance,
        raw_score=raw,
        raw_score_kind=kind,
        source=source,
        created_at=_created(obj),
    )


def hits_from_response(provider: str, kind_prefix: str, payload: Any, limit: int) -> list[MemoryHit]:
    """Hits from a search response body (the whole envelope), at most ``limit`` (``0`` = all)."""
    data = payload.get("data") if isinstance(payload, Mapping) else payload
    hits: list[MemoryHit] = []
    for obj in iter_memories(data):
        hit = _hit(provider, kind_prefix, obj)
        if hit is None:
            continue
        hits.append(hit)
        if limit and len(hits) >= limit:
            break
    hits.sort(key=lambda h: h.relevance, reverse=True)
    return hits
