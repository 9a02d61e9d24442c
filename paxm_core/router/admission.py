"""LTM admission: ID-less long-term memories get a content fingerprint as their id.

Writing the same fact twice then lands on the same id, and an ID-honouring provider (SQLite)
consolidates the copies: it counts ``paxm_occurrences`` and keeps the first and last time the
fact was seen instead of storing duplicates.  The fingerprint covers canonical text, the
``workspace`` metadata and the scope, so the same words in another project or scope stay
separate memories.  STM writes and writes with an explicit id are left alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime

from paxm_core.api.timefmt import format_time
from paxm_core.api.types import TIER_LTM, MemoryItem, normalize_tier
from paxm_core.attribution import META_SCOPE_ID, META_SCOPE_TYPE

__all__ = [
    "META_FINGERPRINT",
    "META_FIRST_SEEN_AT",
    "META_LAST_SEEN_AT",
    "META_OCCURRENCES",
    "admit",
    "fingerprint",
]

META_FINGERPRINT = "paxm_fingerprint"
META_OCCURRENCES = "paxm_occurrences"
META_FIRST_SEEN_AT = "paxm_first_seen_at"
META_LAST_SEEN_AT = "paxm_last_seen_at"


def fingerprint(text: str, metadata: Mapping[str, str]) -> str:
    """Hex sha256 of lowercased whitespace-collapsed text + workspace + scope (upstream's layout)."""
    canonical = " ".join(text.strip().lower().split())
    workspace = (metadata.get("workspace") or "").strip()
    scope_type = (metadata.get(META_SCOPE_TYPE) or "").strip()
    scope_id = (metadata.get(META_SCOPE_ID) or "").strip()
    payload = f"{canonical}\x00workspace={workspace}\x00scope={scope_type}:{scope_id}"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def admit(item: MemoryItem, now: datetime) -> MemoryItem:
    """Give an ID-less LTM item its ``ltm_<fingerprint>`` id and consolidation metadata.

    Must run after attribution sync, because the scope keys are part of the fingerprint.
    """
    if item.id or normalize_tier(item.tier) != TIER_LTM:
        return item
    observed = item.created_at or now
    observed = observed.replace(tzinfo=UTC) if observed.tzinfo is None else observed.astimezone(UTC)
    source_text = item.admission_text if item.admission_text.strip() else item.text
    digest = fingerprint(source_text, item.metadata)
    stamp = format_time(observed)
    metadata = {**item.metadata, META_FINGERPRINT: digest, META_OCCURRENCES: "1"}
    metadata[META_FIRST_SEEN_AT] = metadata[META_LAST_SEEN_AT] = stamp
    return item.replace(id=f"ltm_{digest}", created_at=observed, metadata=metadata)
