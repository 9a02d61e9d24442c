"""Attribution and lifecycle metadata: the string-map representation SQLite stores.

SQLite keeps only ``metadata_json``, so structured origin/scope are written to the canonical
``paxm_*`` keys on the way in and restored from them on the way out, as upstream does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import datetime

from paxm_core import MemoryHit, MemoryItem
from paxm_core.attribution import attribution_metadata, restore_hit
from paxm_provider_sqlite.timestamps import parse_stamp, stamp

__all__ = [
    "FINGERPRINT",
    "FIRST_SEEN",
    "LAST_SEEN",
    "OCCURRENCES",
    "apply_hit_attribution",
    "merge_lifecycle",
    "occurrences",
    "prepare_metadata",
    "stored_rows",
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
    """The metadata to store: the core's canonical attribution keys (``sync_attribution``), then turn boundaries."""
    meta = attribution_metadata(item)
    turn = item.turn
    if turn is not None:
        meta["session_id"] = turn.session_id.strip()
        meta["turn_id"] = turn.turn_id.strip()
        if turn.started_at is not None:
            meta["started_at"] = stamp(turn.started_at)
        if turn.ended_at is not None:
            meta["ended_at"] = stamp(turn.ended_at)
    return meta


def occurrences(meta: dict[str, str]) -> int:
    """The stored occurrence count of an LTM memory; at least 1, whatever the metadata says."""
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


#: Bound parameters per ``IN (...)`` lookup (SQLite's default limit is 32766; stay well below).
_LOOKUP_CHUNK = 500


def stored_rows(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, tuple[dict[str, str], str]]:
    """``id -> (metadata, created_at)`` of the stored rows among ``ids``: one query per 500 ids."""
    from paxm_provider_sqlite.records import decode_metadata

    wanted = list(dict.fromkeys(ids))
    found: dict[str, tuple[dict[str, str], str]] = {}
    for start in range(0, len(wanted), _LOOKUP_CHUNK):
        chunk = wanted[start : start + _LOOKUP_CHUNK]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT id, metadata_json, created_at FROM memories WHERE id IN ({marks})"
        for item_id, meta, created in conn.execute(sql, chunk):
            found[str(item_id)] = (decode_metadata(meta), str(created))
    return found


def merge_lifecycle(
    stored: tuple[dict[str, str], str] | None, item_id: str, incoming: dict[str, str], created_at: datetime
) -> dict[str, str]:
    """Consolidate an LTM re-observation into the stored row's counters.

    ``stored`` is the row already under ``item_id`` (its metadata and ``created_at`` text, see
    :func:`stored_rows`), or ``None``.  Only items carrying ``paxm_fingerprint`` are
    consolidated: occurrences add up, first-seen keeps the earliest and last-seen the latest
    timestamp.  A different fingerprint under the same id raises :class:`FingerprintConflict`
    (two texts must never share an LTM id).
    """
    fingerprint = incoming.get(FINGERPRINT, "")
    if not fingerprint.strip() or stored is None:
        return incoming
    existing, row_created = stored
    if existing.get(FINGERPRINT, "").strip() != fingerprint:
        raise FingerprintConflict(f"sqlite memory {item_id!r} fingerprint conflict")
    merged = {**existing, **incoming}
    merged[FINGERPRINT] = fingerprint
    merged[OCCURRENCES] = str(occurrences(existing) + occurrences(incoming))
    merged[FIRST_SEEN] = _pick(
        _first(existing.get(FIRST_SEEN, ""), row_created), incoming.get(FIRST_SEEN, ""), later=False
    )
    merged[LAST_SEEN] = _pick(
        _first(existing.get(LAST_SEEN, ""), row_created),
        _first(incoming.get(LAST_SEEN, ""), stamp(created_at)),
        later=True,
    )
    return merged


def apply_hit_attribution(hit: MemoryHit) -> MemoryHit:
    """Restore structured origin/scope/provenance on a hit from its stored metadata (the core's rules)."""
    restore_hit(hit)  # in place: the hit was just built from the row, nobody else holds it
    return hit
