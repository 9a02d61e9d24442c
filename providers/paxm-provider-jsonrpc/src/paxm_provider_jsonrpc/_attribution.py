"""Attribution sync for plugins that only keep string metadata.

Before a write, structured ``origin``/``scope`` are merged with legacy ``provenance`` and the
canonical ``paxm_*`` metadata keys, and all three representations are made to agree; after a
search the structured fields are restored from whatever the plugin returned.  This mirrors
upstream so that a plugin which stores only ``metadata`` still round-trips attribution.
"""

from __future__ import annotations

from collections.abc import Mapping

from paxm_core import MemoryHit, MemoryItem, MemoryOrigin, MemoryScope, Provenance

__all__ = ["ATTRIBUTION_KEYS", "prepare_item", "restore_hit"]

_USER, _AGENT, _SESSION, _TURN = "paxm_user_id", "paxm_agent_id", "paxm_session_id", "paxm_turn_id"
_SCOPE_TYPE, _SCOPE_ID = "paxm_scope_type", "paxm_scope_id"
ATTRIBUTION_KEYS = (_USER, _AGENT, _SESSION, _TURN, _SCOPE_TYPE, _SCOPE_ID)


def _first(*values: str) -> str:
    for value in values:
        value = value.strip()
        if value:
            return value
    return ""


def _merge(
    origin: MemoryOrigin, scope: MemoryScope, provenance: Provenance, metadata: Mapping[str, str]
) -> tuple[MemoryOrigin, MemoryScope]:
    # Structured fields win, then legacy provenance, then the canonical metadata keys.
    merged_origin = MemoryOrigin(
        user_id=_first(origin.user_id, provenance.user_id, metadata.get(_USER, "")),
        agent_id=_first(origin.agent_id, provenance.agent_id, metadata.get(_AGENT, "")),
        session_id=_first(origin.session_id, metadata.get(_SESSION, "")),
        turn_id=_first(origin.turn_id, metadata.get(_TURN, "")),
    )
    merged_scope = MemoryScope(
        type=_first(scope.type, provenance.scope_type, metadata.get(_SCOPE_TYPE, "")),
        id=_first(scope.id, provenance.scope_id, metadata.get(_SCOPE_ID, "")),
    )
    return merged_origin, merged_scope


def prepare_item(item: MemoryItem) -> MemoryItem:
    """Return ``item`` with origin, scope, provenance and ``paxm_*`` metadata in agreement."""
    origin, scope = _merge(item.origin, item.scope, item.provenance, item.metadata)
    if item.turn is not None:
        origin = MemoryOrigin(
            origin.user_id,
            origin.agent_id,
            origin.session_id or item.turn.session_id.strip(),
            origin.turn_id or item.turn.turn_id.strip(),
        )
    metadata = {k: v for k, v in item.metadata.items() if k not in ATTRIBUTION_KEYS}
    for key, value in (
        (_USER, origin.user_id),
        (_AGENT, origin.agent_id),
        (_SESSION, origin.session_id),
        (_TURN, origin.turn_id),
        (_SCOPE_TYPE, scope.type),
        (_SCOPE_ID, scope.id),
    ):
        if value:
            metadata[key] = value
    return item.replace(
        metadata=metadata,
        origin=origin,
        scope=scope,
        provenance=Provenance(origin.user_id, origin.agent_id, scope.type, scope.id),
    )


def restore_hit(hit: MemoryHit) -> MemoryHit:
    """Return ``hit`` with structured attribution restored; an incomplete scope becomes ``unknown``."""
    origin, scope = _merge(hit.origin, hit.scope, hit.provenance, hit.metadata)
    if not (scope.type and scope.id):
        scope = MemoryScope(type="unknown")
    return hit.copy(
        origin=origin,
        scope=scope,
        provenance=Provenance(origin.user_id, origin.agent_id, scope.type, scope.id),
    )
