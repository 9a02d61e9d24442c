"""Attribution and lifecycle metadata: the string-map representation SQLite stores.

SQLite keeps only ``metadata_json``, so structured origin/scope are written to the canonical
``paxm_*`` keys on the way in and restored from them on the way out, as upstream does.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from paxm_core import MemoryHit, MemoryItem, TurnContext, sync_attribution
from paxm_core.attribution import restore_hit
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


class FingerprintConflict(Exception):
    """An LTM upsert's fingerprint differs from the stored row's."""


def _first(*values: str) -> str:
    for value in values:
        if value.strip():
            return value.strip()
    return ""


def prepare_metadata(item: MemoryItem) -> dict[str, str]:
    """The metadata to store: the core's canonical attribution keys (``sync_attribution``), then turn boundaries.

    The precedence rules (fields over legacy provenance over metadata) are the core's, not a copy.
    """
    meta = dict(sync_attribution(item).metadata)
    if item.turn is not None:
        _turn_metadata(meta, item.turn)
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
    """Restore structured origin/scope/provenance on a hit from its stored metadata (the core's rules)."""
    restore_hit(hit)  # in place: the hit was just built from the row, nobody else holds it
    return hit
