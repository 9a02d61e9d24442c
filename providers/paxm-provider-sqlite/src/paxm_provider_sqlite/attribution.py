"""Attribution and lifecycle metadata: the string-map representation SQLite stores.

SQLite keeps only ``metadata_json``, so structured origin/scope are written to the canonical
``paxm_*`` keys on the way in and restored from them on the way out, as upstream does.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from paxm_core import MemoryHit, MemoryItem, MemoryOrigin, MemoryScope, Provenance, TurnContext
from paxm_provider_sqlite.timestamps import parse_stamp, stamp

__all__ = [
    "FINGERPRINT",
    "apply_hit_attribution",
    "merge_lifecycle",
    "prepare_metadata",
]

FINGERPRINT = "paxm_fingerprint"
OCCURRENCES = "paxm_occurrences"
FIRST_SEEN = "paxm_first_seen_at"
LAST_SEEN = "paxm_last_seen_at"
_ATTRIBUTION_KEYS = (
    ("paxm_user_id", "user_id"),
    ("paxm_agent_id", "agent_id"),
    ("paxm_session_id", "session_id"),
    ("paxm_turn_id", "turn_id"),
)
_SCOPE_TYPE = "paxm_scope_type"
_SCOPE_ID = "paxm_scope_id"


class FingerprintConflict(Exception):
    """An LTM upsert's fingerprint differs from the stored row's."""


def _first(*values: str) -> str:
    for value in values:
        if value.strip():
            return value.strip()
    return ""


def prepare_metadata(item: MemoryItem) -> dict[str, str]:
    """The metadata to store: canonical attribution keys synced, then turn boundaries."""
    meta = dict(item.metadata)
    turn = item.turn
    origin = {
        "user_id": _first(item.origin.user_id, item.provenance.user_id, meta.get("paxm_user_id", "")),
        "agent_id": _first(item.origin.agent_id, item.provenance.agent_id, meta.get("paxm_agent_id", "")),
        "session_id": _first(item.origin.session_id, meta.get("paxm_session_id", ""), turn.session_id if turn else ""),
        "turn_id": _first(item.origin.turn_id, meta.get("paxm_turn_id", ""), turn.turn_id if turn else ""),
    }
    scope_type = _first(item.scope.type, item.provenance.scope_type, meta.get(_SCOPE_TYPE, ""))
    scope_id = _first(item.scope.id, item.provenance.scope_id, meta.get(_SCOPE_ID, ""))
    for key, field in _ATTRIBUTION_KEYS:
        meta.pop(key, None)
        if origin[field]:
            meta[key] = origin[field]
    meta.pop(_SCOPE_TYPE, None)
    meta.pop(_SCOPE_ID, None)
    if scope_type:
        meta[_SCOPE_TYPE] = scope_type
    if scope_id:
        meta[_SCOPE_ID] = scope_id
    if turn is not None:
        _turn_metadata(meta, turn)
    return meta


def _turn_metadata(meta: dict[str, str], turn: TurnContext) -> None:
    meta["session_id"] = turn.session_id.strip()
    meta["turn_id"] = turn.turn_id.strip()
    if turn.started_at is not None:
        meta["started_at"] = stamp(turn.started_at)
    if turn.ended_at is not None:
        meta["ended_at"] = stamp(turn.ended_at)


def _occurrences(meta: dict[str, str]) -> int:
    try:
        value = int(meta.get(OCCURRENCES, "").strip())
    except ValueError:
        return 1
    return value if value >= 1 else 1


def _pick(left: str, right: str, *, later: bool) -> str:
    lt, rt = parse_stamp(left.strip()), parse_stamp(right.strip())
    if lt is None:
        return right
    if rt is None:
        return left
    if later:
        return left if lt > rt else right
    return left if lt < rt else right


def merge_lifecycle(
    conn: sqlite3.Connection, item_id: str, incoming: dict[str, str], created_at: datetime
) -> dict[str, str]:
    """Consolidate an LTM re-observation into the stored row's counters.

    Only items carrying ``paxm_fingerprint`` are consolidated: occurrences add up, first-seen
    keeps the earliest and last-seen the latest timestamp.  A different fingerprint under the
    same id raises :class:`FingerprintConflict` (two texts must never share an LTM id).
    """
    fingerprint = incoming.get(FINGERPRINT, "")
    if not fingerprint.strip():
        return incoming
    row = conn.execute("SELECT metadata_json, created_at FROM memories WHERE id = ?", (item_id,)).fetchone()
    if row is None:
        return incoming
    from paxm_provider_sqlite.records import decode_metadata

    existing = decode_metadata(row[0])
    if existing.get(FINGERPRINT, "").strip() != fingerprint:
        raise FingerprintConflict(f"sqlite memory {item_id!r} fingerprint conflict")
    merged = {**existing, **incoming}
    merged[FINGERPRINT] = fingerprint
    merged[OCCURRENCES] = str(_occurrences(existing) + _occurrences(incoming))
    merged[FIRST_SEEN] = _pick(_first(existing.get(FIRST_SEEN, ""), row[1]), incoming.get(FIRST_SEEN, ""), later=False)
    merged[LAST_SEEN] = _pick(
        _first(existing.get(LAST_SEEN, ""), row[1]), _first(incoming.get(LAST_SEEN, ""), stamp(created_at)), later=True
    )
    return merged


def apply_hit_attribution(hit: MemoryHit) -> MemoryHit:
    """Restore structured origin/scope/provenance on a hit from its stored metadata."""
    meta = hit.metadata
    origin = MemoryOrigin(
        user_id=meta.get("paxm_user_id", "").strip(),
        agent_id=meta.get("paxm_agent_id", "").strip(),
        session_id=meta.get("paxm_session_id", "").strip(),
        turn_id=meta.get("paxm_turn_id", "").strip(),
    )
    scope = MemoryScope(meta.get(_SCOPE_TYPE, "").strip(), meta.get(_SCOPE_ID, "").strip())
    if not (scope.type and scope.id):
        scope = MemoryScope(type="unknown")
    hit.origin = origin
    hit.scope = scope
    hit.provenance = Provenance(origin.user_id, origin.agent_id, scope.type, scope.id)
    return hit
