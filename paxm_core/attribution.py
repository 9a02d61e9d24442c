"""Attribution: who wrote a memory (origin) and who may see it (scope).

Many providers store only a string map, so before every write the trusted structured
attribution is mirrored into canonical ``paxm_*`` metadata keys, and on every hit it is
restored from them.  Structured fields always win over legacy provenance, which wins over
metadata.  Lifecycle fields (tier, expiry) get the same fallback treatment for providers that
keep them only as ``paxm_tier`` / ``paxm_expires_at`` metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from paxm_core.timefmt import format_time, parse_time
from paxm_core.types import (
    TIER_LTM,
    MemoryHit,
    MemoryItem,
    MemoryOrigin,
    MemoryScope,
    Provenance,
    normalize_tier,
)

__all__ = [
    "ATTRIBUTION_KEYS",
    "META_AGENT_ID",
    "META_EXPIRES_AT",
    "META_SCOPE_ID",
    "META_SCOPE_TYPE",
    "META_SEQUENCE",
    "META_SESSION_ID",
    "META_TIER",
    "META_TURN_ID",
    "META_USER_ID",
    "effective_expires_at",
    "expires_at_for",
    "metadata_expires_at",
    "effective_tier",
    "lifecycle_metadata",
    "prepare_item",
    "restore_attribution",
    "restore_hit",
    "sync_attribution",
    "scope_label",
    "without_attribution",
    "without_paxm_keys",
]

META_USER_ID = "paxm_user_id"
META_AGENT_ID = "paxm_agent_id"
META_SESSION_ID = "paxm_session_id"
META_TURN_ID = "paxm_turn_id"
META_SCOPE_TYPE = "paxm_scope_type"
META_SCOPE_ID = "paxm_scope_id"
META_TIER = "paxm_tier"
META_EXPIRES_AT = "paxm_expires_at"
META_SEQUENCE = "sequence"

#: The canonical keys the router owns; caller-supplied values are always replaced.
ATTRIBUTION_KEYS = (META_USER_ID, META_AGENT_ID, META_SESSION_ID, META_TURN_ID, META_SCOPE_TYPE, META_SCOPE_ID)


def without_attribution(metadata: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``metadata`` without the canonical attribution keys."""
    return {k: v for k, v in metadata.items() if k not in ATTRIBUTION_KEYS}


def without_paxm_keys(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """A copy of caller metadata without any ``paxm_`` key.

    Used on untrusted input (recall ``meta``, remember ``metadata``): only the runtime may set
    ``paxm_*`` values, so a caller can neither forge attribution nor widen a recall with them.
    """
    if not metadata:
        return {}
    out: dict[str, str] = {}
    for key, value in metadata.items():
        key = str(key)
        if key.startswith("paxm_") or value is None:
            continue
        # metadata is a string map on the wire; lenient callers (JSON clients) may send
        # numbers or booleans, which are stored the way upstream's JSON decoding would see them
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        else:
            out[key] = value if isinstance(value, str) else str(value)
    return out


def _merge(
    origin: MemoryOrigin, scope: MemoryScope, provenance: Provenance, metadata: Mapping[str, str]
) -> tuple[MemoryOrigin, MemoryScope]:
    """Fields win, then legacy provenance, then canonical metadata keys (hot path: no temporaries)."""
    if origin.user_id and origin.agent_id and origin.session_id and origin.turn_id and scope.type and scope.id:
        return origin, scope
    get = metadata.get
    merged_origin = MemoryOrigin(
        user_id=origin.user_id or provenance.user_id.strip() or (get(META_USER_ID) or "").strip(),
        agent_id=origin.agent_id or provenance.agent_id.strip() or (get(META_AGENT_ID) or "").strip(),
        session_id=origin.session_id or (get(META_SESSION_ID) or "").strip(),
        turn_id=origin.turn_id or (get(META_TURN_ID) or "").strip(),
    )
    merged_scope = MemoryScope(
        type=scope.type or provenance.scope_type.strip() or (get(META_SCOPE_TYPE) or "").strip(),
        id=scope.id or provenance.scope_id.strip() or (get(META_SCOPE_ID) or "").strip(),
    )
    return merged_origin, merged_scope


def prepare_item(item: MemoryItem, default_scope: MemoryScope | None = None) -> MemoryItem:
    """Synchronize an item's structured attribution with its canonical metadata keys.

    Fields win over legacy provenance, which wins over metadata; a turn context fills session
    and turn when absent; ``default_scope`` (the write profile's) applies when no scope is known.
    """
    origin, scope = _merge(item.origin, item.scope, item.provenance, item.metadata)
    if item.turn is not None:
        origin = MemoryOrigin(
            origin.user_id,
            origin.agent_id,
            origin.session_id or item.turn.session_id.strip(),
            origin.turn_id or item.turn.turn_id.strip(),
        )
    if scope.is_empty() and default_scope is not None:
        scope = default_scope
    metadata = without_attribution(item.metadata)
    for key, value in (
        (META_USER_ID, origin.user_id),
        (META_AGENT_ID, origin.agent_id),
        (META_SESSION_ID, origin.session_id),
        (META_TURN_ID, origin.turn_id),
        (META_SCOPE_TYPE, scope.type),
        (META_SCOPE_ID, scope.id),
    ):
        if value.strip():
            metadata[key] = value.strip()
    return item.replace(
        metadata=metadata,
        origin=origin,
        scope=scope,
        provenance=Provenance(origin.user_id, origin.agent_id, scope.type, scope.id),
    )


def restore_hit(hit: MemoryHit) -> None:
    """Restore structured attribution on ``hit`` in place (hits are router-owned copies).

    A scope without both type and id is reported as ``{"type": "unknown"}``.
    """
    origin, scope = _merge(hit.origin, hit.scope, hit.provenance, hit.metadata)
    if not scope.type or not scope.id:
        scope = MemoryScope(type="unknown")
    hit.origin = origin
    hit.scope = scope
    hit.provenance = Provenance(origin.user_id, origin.agent_id, scope.type, scope.id)


def scope_label(provenance: Provenance) -> str:
    """``type:id`` for display, or ``unknown``."""
    if not provenance.scope_type or not provenance.scope_id:
        return "unknown"
    return f"{provenance.scope_type}:{provenance.scope_id}"


def effective_tier(hit: MemoryHit) -> str:
    """The hit's tier: its field, else ``paxm_tier`` metadata, else ``ltm``."""
    if hit.tier:
        return normalize_tier(hit.tier)
    value = (hit.metadata.get(META_TIER) or "").strip()
    return normalize_tier(value) if value else TIER_LTM


def effective_expires_at(hit: MemoryHit) -> datetime | None:
    """The hit's expiry: its field, else ``paxm_expires_at`` / ``expires_at`` metadata.

    Unparseable metadata values are ignored (the memory is treated as not expiring), as upstream.
    """
    if hit.expires_at is not None:
        return hit.expires_at if hit.expires_at.tzinfo else hit.expires_at.replace(tzinfo=UTC)
    return metadata_expires_at(hit.metadata, (META_EXPIRES_AT, "expires_at"))


def metadata_expires_at(metadata: Mapping[str, str], keys: tuple[str, ...] = (META_EXPIRES_AT,)) -> datetime | None:
    """The expiry a provider kept in string metadata (``paxm_expires_at``), or ``None``.

    The one reader of stored expiry strings: providers that keep lifecycle only as metadata
    call it when they build hits.  The first of ``keys`` with a parseable value wins;
    unparseable values are ignored (the memory is treated as not expiring), as upstream.
    """
    for key in keys:
        value = (metadata.get(key) or "").strip()
        if not value:
            continue
        try:
            parsed = parse_time(value)
        except ValueError:
            continue
        if parsed is not None:
            return parsed
    return None


def expires_at_for(created_at: datetime, expires_after: float | None) -> datetime | None:
    """When a memory written at ``created_at`` under a profile's ``expires_after`` expires.

    The one rule for expiry from config (``write_profiles.<name>.expires_after``, seconds,
    which only ``stm`` profiles set): ``created_at + expires_after``, or ``None`` (never) when
    the profile sets none.  The router applies it to every write (CLI, MCP, library) and the
    passive path to captured events; a naive ``created_at`` is taken as UTC.
    """
    if not expires_after or expires_after <= 0:
        return None
    base = created_at if created_at.tzinfo else created_at.replace(tzinfo=UTC)
    return base + timedelta(seconds=float(expires_after))


def lifecycle_metadata(item: MemoryItem) -> dict[str, str]:
    """``paxm_tier`` / ``paxm_expires_at`` for providers that keep lifecycle only in metadata."""
    out: dict[str, str] = {}
    if item.tier:
        out[META_TIER] = normalize_tier(item.tier)
    if item.expires_at is not None:
        out[META_EXPIRES_AT] = format_time(item.expires_at)
    return out


def sync_attribution(item: MemoryItem) -> MemoryItem:
    """Public helper for providers: ``item`` with origin, scope, provenance and ``paxm_*`` metadata agreeing.

    A provider that stores only string metadata calls this before writing (the router already
    does it for items it routes; calling it again is harmless).
    """
    return prepare_item(item)


def restore_attribution(hit: MemoryHit) -> MemoryHit:
    """Public helper for providers: a copy of ``hit`` with origin/scope restored from ``paxm_*`` metadata.

    Structured fields win over legacy provenance, which wins over metadata; an incomplete scope
    becomes ``{"type": "unknown"}``.
    """
    copy = hit.copy()
    restore_hit(copy)
    return copy


def attribution_metadata(item: MemoryItem) -> dict[str, str]:
    """``sync_attribution(item).metadata`` without building the synchronized item.

    For providers that store only the string map: the same keys, values and order (caller
    metadata without the canonical keys, then the canonical keys in their fixed order), as a
    new dict the caller may change.  It skips the item copy and the origin/scope/provenance
    objects, which a provider that keeps only metadata would throw away; on an item the
    router already prepared, the merge finds the fields complete and returns at once.
    """
    origin, scope = _merge(item.origin, item.scope, item.provenance, item.metadata)
    session_id, turn_id = origin.session_id, origin.turn_id
    if item.turn is not None:
        session_id = session_id or item.turn.session_id.strip()
        turn_id = turn_id or item.turn.turn_id.strip()
    metadata = {k: v for k, v in item.metadata.items() if k not in ATTRIBUTION_KEYS}
    for key, value in (
        (META_USER_ID, origin.user_id),
        (META_AGENT_ID, origin.agent_id),
        (META_SESSION_ID, session_id),
        (META_TURN_ID, turn_id),
        (META_SCOPE_TYPE, scope.type),
        (META_SCOPE_ID, scope.id),
    ):
        value = value.strip()
        if value:
            metadata[key] = value
    return metadata
