"""Telemetry events: plain dicts with upstream's field names, one JSONL line per operation.

Empty fields are dropped (upstream's ``omitempty``), except ``time``, ``kind`` and ``success``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from paxm_core.api.json import JSONObject
from paxm_core.api.timefmt import format_time, parse_time, utcnow
from paxm_core.api.types import normalize_tier
from paxm_core.digest import sha256_hex

__all__ = ["EVENT_FIELDS", "normalize_event", "query_fields", "telemetry_error"]

#: Field order of upstream's Event; unknown keys follow in the order given.
EVENT_FIELDS: tuple[str, ...] = tuple(
    """time kind source command target hook_event profile success skipped duration_ms provider_duration_ms
    passive_write_latency_total_ms passive_write_samples query_hash query_length query_preview hit_count
    inserted_count item_count ref_count flushed provider_recalls provider_writes provider_hits provider_refs
    provider_errors provider_recall_details recall_hits recall_timed_out error episode_id session_key
    provider""".split()
)
_INT_FIELDS = frozenset(
    """duration_ms provider_duration_ms passive_write_latency_total_ms passive_write_samples query_length
    hit_count inserted_count item_count ref_count flushed""".split()
)
_ALWAYS = frozenset({"time", "kind", "success"})
#: Short names some callers use for counts, mapped to the upstream field they mean.
_ALIASES = {
    "hits": "hit_count",
    "inserted": "inserted_count",
    "items": "item_count",
    "refs": "ref_count",
    "timed_out": "recall_timed_out",
}

MAX_ERROR_CHARS = 240
MAX_RECALL_HIT_DETAILS = 10
RECALL_HIT_PREVIEW_CHARS = 160


def truncate_chars(value: str, limit: int) -> str:
    """Cut ``value`` to at most ``limit`` characters (code points, like upstream's runes)."""
    return value[: max(limit, 0)]


def telemetry_error(error: object) -> str:
    """The error text stored in an event: ``str(error)`` cut to 240 characters ("" for none)."""
    if error is None:
        return ""
    return truncate_chars(str(error), MAX_ERROR_CHARS)


def query_fields(query: str, *, capture_preview: bool, preview_chars: int) -> dict[str, str | int]:
    """Privacy-preserving fields for a query: sha256 prefix, length, and a preview only on opt-in."""
    query = query.strip()
    if not query:
        return {}
    out: dict[str, str | int] = {
        "query_hash": sha256_hex(query.encode("utf-8"))[:16],
        "query_length": len(query),
    }
    if capture_preview:
        out["query_preview"] = truncate_chars(query, preview_chars)
    return out


def count_by(items: Iterable[object], field: str) -> dict[str, int]:
    """How many ``items`` (objects or mappings) name each provider in ``field`` (routes: ``name``)."""
    counts: dict[str, int] = {}
    for item in items:
        name = str(_get(item, field) or "").strip()
        if name:
            counts[name] = counts.get(name, 0) + 1
    return counts


def provider_error_details(errors: Iterable[object]) -> list[JSONObject]:
    """``[{provider, op?, required?}]`` from ProviderErrorInfo objects or dicts; messages are not kept."""
    details: list[JSONObject] = []
    for err in errors:
        provider = _get(err, "provider")
        if not provider:
            continue
        detail: JSONObject = {"provider": str(provider)}
        if _get(err, "op"):
            detail["op"] = str(_get(err, "op"))
        if _get(err, "required"):
            detail["required"] = True
        details.append(detail)
    return details


def recall_hit_details(hits: Iterable[object], *, capture_preview: bool) -> list[JSONObject]:
    """A bounded snapshot (first 10) of recalled hits; hit text only when previews are enabled."""
    details: list[JSONObject] = []
    for hit in hits:
        if len(details) >= MAX_RECALL_HIT_DETAILS:
            break
        detail: JSONObject = {
            "provider": str(_get(hit, "provider") or ""),
            "id": str(_get(hit, "id") or ""),
            "score": _float(_get(hit, "score")),
            "relevance": _float(_get(hit, "relevance")),
            "tier": normalize_tier(str(_get(hit, "tier") or "")),
        }
        if capture_preview:
            detail["text_preview"] = truncate_chars(str(_get(hit, "text") or "").strip(), RECALL_HIT_PREVIEW_CHARS)
        details.append({k: v for k, v in detail.items() if v not in ("", 0.0)})
    return details


def normalize_event(
    event: Mapping[str, object], *, capture_preview: bool = False, preview_chars: int = 80
) -> dict[str, object]:
    """A clean copy of ``event`` to write: ``time`` and ``success`` filled, whole milliseconds,
    upstream's names for short count names, upstream's field order, empty fields dropped.

    A raw ``query`` key is replaced by :func:`query_fields`: a caller cannot leak query text by accident.
    """
    data = dict(event)
    for alias, name in _ALIASES.items():
        if alias in data and name not in data and isinstance(data[alias], int | bool):
            data[name] = data.pop(alias)
    raw_query = data.pop("query", None)
    if isinstance(raw_query, str) and "query_hash" not in data:
        data.update(query_fields(raw_query, capture_preview=capture_preview, preview_chars=preview_chars))
    if not capture_preview:
        data.pop("query_preview", None)
    data["time"] = _event_time(data.get("time"))
    data["kind"] = str(data.get("kind") or "event")
    if "error" in data:
        data["error"] = telemetry_error(data["error"]) if data["error"] else ""
    data["success"] = bool(data["success"]) if "success" in data else not data.get("error")
    for name in _INT_FIELDS & data.keys():
        value = data[name]
        data[name] = int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
    if "provider_errors" in data:
        data["provider_errors"] = provider_error_details(_items(data["provider_errors"]))
    if "provider_recall_details" in data:
        data["provider_recall_details"] = [_recall_detail(r) for r in _items(data["provider_recall_details"])]
    names = [*[n for n in EVENT_FIELDS if n in data], *[k for k in data if k not in EVENT_FIELDS]]
    return {name: data[name] for name in names if name in _ALWAYS or not _is_empty(data[name])}


def _event_time(value: object) -> str:
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, str) and value.strip():
        parsed = parse_time(value)
        if parsed is not None:
            return format_time(parsed)
    return format_time(utcnow())


def _is_empty(value: object) -> bool:
    return value is None or value is False or value == "" or value == 0 or value == {} or value == []


def _items(value: object) -> Iterable[object]:
    """The items of an event's list field (``None`` or empty: none)."""
    if not value:
        return ()
    if not isinstance(value, Iterable):
        raise TypeError(f"not a list: {type(value).__name__}")
    return value


def _recall_detail(recall: object) -> object:
    """One ``provider_recall_details`` entry as JSON (a ``ProviderRecall`` or already a mapping)."""
    to_json = getattr(recall, "to_json", None)
    if to_json is not None:
        return to_json()
    if not isinstance(recall, Mapping):
        raise TypeError(f"not a provider recall: {type(recall).__name__}")
    return dict(recall)


def _float(value: object) -> float:
    """A hit's score as a float (absent: 0.0), as ``float()`` reads it."""
    if not value:
        return 0.0
    if not isinstance(value, int | float | str):
        raise TypeError(f"not a number: {type(value).__name__}")
    return float(value)


def _get(obj: object, name: str) -> object:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)
