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

from paxm_core.api.timefmt import parse_time
from paxm_core.api.types import (
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
    "CLI_AGENT",
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
    "prepare_item",
    "restore_attribution",
    "restore_hit",
    "sync_attribution",
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

#: The agent name a write from the command line (``paxm remember``) is made as.  The CLI is not
#: a harness: its writes say so instead of borrowing the one enabled agent's id (or ``unknown``).
CLI_AGENT = "cli"


#: The canonical keys the router owns; caller-supplied values are always replaced.
ATTRIBUTION_KEYS = (META_USER_ID, META_AGENT_ID, META_SESSION_ID, META_TURN_ID, META_SCOPE_TYPE, META_SCOPE_ID)
_ATTRIBUTION_KEY_SET = frozenset(ATTRIBUTION_KEYS)


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


def _attribution(
    item: MemoryItem | MemoryHit, default_scope: MemoryScope | None
) -> tuple[str, str, str, str, MemoryScope, str, str]:
    """The merged attribution of an item or hit: user, agent, session, turn ids, the scope and its
    two fields (fields win, then legacy provenance, then canonical metadata, then an item's turn
    context for session and turn, then ``default_scope`` when no scope is known)."""
    origin, scope = item.origin, item.scope
    user, agent, session, turn_id = origin.user_id, origin.agent_id, origin.session_id, origin.turn_id
    scope_type, scope_id = scope.type, scope.id
    if not (user and agent and session and turn_id and scope_type and scope_id):
        provenance = item.provenance
        get = item.metadata.get
        user = user or provenance.user_id.strip() or (get(META_USER_ID) or "").strip()
        agent = agent or provenance.agent_id.strip() or (get(META_AGENT_ID) or "").strip()
        session = session or (get(META_SESSION_ID) or "").strip()
        turn_id = turn_id or (get(META_TURN_ID) or "").strip()
        scope_type = scope_type or provenance.scope_type.strip() or (get(META_SCOPE_TYPE) or "").strip()
        scope_id = scope_id or provenance.scope_id.strip() or (get(META_SCOPE_ID) or "").strip()
    turn = item.turn if isinstance(item, MemoryItem) else None
    if turn is not None:
        session = session or turn.session_id.strip()
        turn_id = turn_id or turn.turn_id.strip()
    if not (scope_type or scope_id) and default_scope is not None:
        scope, scope_type, scope_id = default_scope, default_scope.type, default_scope.id
    elif scope_type != scope.type or scope_id != scope.id or type(scope) is not MemoryScope:
        scope = MemoryScope(scope_type, scope_id)
    return user, agent, session, turn_id, scope, scope_type, scope_id


def _canonical_metadata(
    metadata: Mapping[str, str], user: str, agent: str, session: str, turn_id: str, scope_type: str, scope_id: str
) -> dict[str, str]:
    """Caller metadata without the canonical keys, then the non-blank canonical values (stripped)."""
    out = {k: v for k, v in metadata.items() if k not in _ATTRIBUTION_KEY_SET}
    for key, value in zip(ATTRIBUTION_KEYS, (user, agent, session, turn_id, scope_type, scope_id), strict=True):
        if value.strip():
            out[key] = value.strip()
    return out


def prepare_item(item: MemoryItem, default_scope: MemoryScope | None = None) -> MemoryItem:
    """Synchronize an item's structured attribution with its canonical metadata keys.

    Fields win over legacy provenance, which wins over metadata; a turn context fills session
    and turn when absent; ``default_scope`` (the write profile's) applies when no scope is known.
    The returned item always has a metadata dict of its own.
    """
    user, agent, session, turn_id, scope, scope_type, scope_id = _attribution(item, default_scope)
    # equal values keep the item's own objects (equality also compares the class)
    origin = MemoryOrigin(user, agent, session, turn_id)
    provenance = Provenance(user, agent, scope_type, scope_id)
    return item.replace(
        metadata=_canonical_metadata(item.metadata, user, agent, session, turn_id, scope_type, scope_id),
        origin=item.origin if item.origin == origin else origin,
        scope=scope,
        provenance=item.provenance if item.provenance == provenance else provenance,
    )


def restore_hit(hit: MemoryHit) -> None:
    """Restore structured attribution on ``hit`` in place (hits are router-owned copies).

    A scope without both type and id is reported as ``{"type": "unknown"}``.
    """
    user, agent, session, turn_id, scope, scope_type, scope_id = _attribution(hit, None)
    if not scope_type or not scope_id:
        scope = MemoryScope(type="unknown")
    hit.origin = MemoryOrigin(user, agent, session, turn_id)
    hit.scope = scope
    hit.provenance = Provenance(user, agent, scope.type, scope.id)


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
    user, agent, session, turn_id, _scope, scope_type, scope_id = _attribution(item, None)
    return _canonical_metadata(item.metadata, user, agent, session, turn_id, scope_type, scope_id)
