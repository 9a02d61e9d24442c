"""Pure functions: event payloads, episode envelopes and episode -> provider items.

Everything stored is canonical JSON (sorted keys, compact, UTF-8), so a payload's SHA-256 is
a function of its content and can be recomputed when read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from paxm_core.api.json import JSONObject
from paxm_core.api.timefmt import format_time, parse_time
from paxm_core.api.types import MemoryItem, MemoryOrigin, MemoryScope, Provenance, TurnContext
from paxm_core.capture._inbox import sha256_hex

__all__ = [
    "canonical_json",
    "decode_event_payload",
    "envelope_json",
    "episode_items",
    "event_payload_json",
    "sequence_integrity",
]

#: Metadata keys the queue sets on every episode item; event metadata cannot override them.
RESERVED_METADATA = (
    "paxm_episode_id",
    "paxm_episode_complete",
    "paxm_episode_events",
    "paxm_session_key",
    "paxm_episode_checksum",
    "paxm_missing_sequences",
    "paxm_integrity_errors",
)


_CANONICAL_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def canonical_json(value: object) -> str:
    """Deterministic JSON text (sorted keys, no spaces, non-ASCII kept)."""
    return _CANONICAL_ENCODE(value)


#: the keys of an episode envelope
ENVELOPE_KEYS = frozenset(
    {"captured_at", "checksum", "complete", "events", "id", "integrity_errors", "missing_sequences", "session_key"}
)
_EMPTY_EVENTS = '"events":[]'


def envelope_json(fields: Mapping[str, object], event_texts: Sequence[str]) -> str:
    """``canonical_json`` of an envelope whose ``events`` are the given canonical event texts.

    The stored event payloads are spliced in as they are.  The keys that sort before
    ``events`` (``captured_at``, ``checksum``, ``complete``) are strings or booleans, so the
    first ``"events":[]`` in the text is the events key itself.
    """
    head = canonical_json({**fields, "events": []})
    return head.replace(_EMPTY_EVENTS, '"events":[' + ",".join(event_texts) + "]", 1)


def is_plain_envelope(envelope: object) -> bool:
    """Whether :func:`envelope_json` can rebuild ``envelope`` (the shape the queue writes)."""
    return (
        isinstance(envelope, dict)
        and envelope.keys() == ENVELOPE_KEYS
        and isinstance(envelope["captured_at"], str)
        and isinstance(envelope["checksum"], str)
        and isinstance(envelope["complete"], bool)
    )


def event_payload_json(item: MemoryItem, profile: str) -> str:
    """The stored text of one event: the item's wire JSON plus its internal fields."""
    payload: JSONObject = {"item": item.to_json(), "profile": profile}
    if item.admission_text:
        payload["admission_text"] = item.admission_text
    return canonical_json(payload)


def decode_event_payload(payload: object) -> tuple[MemoryItem, str]:
    """The parsed :func:`event_payload_json`: ``(item, profile)``; raises ``ValueError`` on malformed data."""
    if not isinstance(payload, dict):
        raise ValueError("event payload must be an object")
    get = payload.get
    item = MemoryItem.from_json(get("item"))
    admission = get("admission_text") or ""
    if type(admission) is not str and not isinstance(admission, str):
        raise ValueError("admission_text must be a string")
    profile = get("profile") or "default"
    if type(profile) is not str and not isinstance(profile, str):
        raise ValueError("profile must be a string")
    # a dataclass copy costs more than the rest of the decode: only when there is something to set
    return (item.replace(admission_text=admission) if admission else item), profile


def sequence_integrity(
    complete: bool, source: Sequence[int | None], finals: Iterable[int | None]
) -> tuple[list[int], list[str]]:
    """Upstream's source-sequence check for a sealed-by-``turn_end`` episode.

    Returns ``(missing_sequences, integrity_errors)``; both empty when the harness sends no
    source sequences or the episode was sealed incomplete (by age or flush).
    """
    final_set = {f for f in finals if f is not None}
    if not complete or (not final_set and all(s is None for s in source)):
        return [], []
    errors: list[str] = []
    final = next(iter(final_set)) if len(final_set) == 1 else 0
    if len(final_set) != 1 or final <= 0:
        errors.append("invalid_final_sequence")
    present = [s for s in source if s is not None]
    if len(present) != len(source):
        errors.append("missing_source_sequence")
    counts: dict[int, int] = {}
    for s in present:
        counts[s] = counts.get(s, 0) + 1
    for s in sorted(counts):
        if counts[s] > 1:
            errors.append(f"duplicate_sequence:{s}")
        if final > 0 and s > final:
            errors.append(f"sequence_after_final:{s}")
    missing = [s for s in range(1, final + 1) if s not in counts] if final > 0 else []
    return missing, errors


def episode_items(episode: dict[str, Any], profiles: Iterable[str] = ()) -> list[MemoryItem]:
    """Turn an episode envelope into provider items: one per (profile, tier, expiry) group.

    :param episode: the decoded episode envelope.
    :param profiles: only events of these write profiles (the delivery's route snapshot);
        empty means all.
    """
    wanted = set(profiles)
    groups: dict[tuple[str, str, str], list[MemoryItem]] = {}
    all_items: list[MemoryItem] = []
    for payload in episode["events"]:
        item, profile = decode_event_payload(payload)
        all_items.append(item)
        if wanted and profile not in wanted:
            continue
        if not item.text.strip():
            continue  # a turn-end marker without text ends the turn; it adds nothing to send
        expires = item.expires_at
        key = (profile, item.tier, format_time(expires) if expires is not None else "")
        group = groups.get(key)
        if group is None:
            groups[key] = [item]
        else:
            group.append(item)
    turn = _turn_context(episode, all_items)
    multiple = len(groups) > 1
    return [_group_item(episode, key, groups[key], multiple, turn) for key in sorted(groups)]


def _turn_context(episode: dict[str, Any], items: list[MemoryItem]) -> TurnContext:
    session_id = episode["session_key"]
    turn_id = episode["id"]
    started: datetime | None = None
    ended: datetime | None = None
    for item in items:
        metadata = item.metadata
        if metadata:
            session_id = (metadata.get("session_id") or "").strip() or session_id
            turn_id = (metadata.get("turn_id") or "").strip() or turn_id
        created = item.created_at
        if created is not None:
            started = created if started is None or created < started else started
            ended = created if ended is None or created > ended else ended
    return TurnContext(session_id, turn_id, started, ended)


def _group_item(
    episode: dict[str, Any], key: tuple[str, str, str], items: list[MemoryItem], multiple: bool, turn: TurnContext
) -> MemoryItem:
    """One provider item from a group's events (each with non-blank text, in order)."""
    profile, tier, expiry = key
    metadata = _group_metadata(episode, items)
    item_id = episode["id"]
    if multiple:
        item_id += "_" + sha256_hex(f"{profile}\x00{tier}\x00{expiry}".encode())[:12]
    first = items[0]
    # in one pass: the earliest capture time, the first admission text that is not blank,
    # and the first non-empty attribution of each kind (else the first event's)
    created: datetime | None = None
    admission = ""
    origin: MemoryOrigin | None = None
    scope: MemoryScope | None = None
    provenance: Provenance | None = None
    for i in items:
        stamp = i.created_at
        if stamp is not None and (created is None or stamp < created):
            created = stamp
        if not admission and i.admission_text.strip():
            admission = i.admission_text
        if origin is None and not i.origin.is_empty():
            origin = i.origin
        if scope is None and not i.scope.is_empty():
            scope = i.scope
        if provenance is None and not i.provenance.is_empty():
            provenance = i.provenance
    # a write the active path queued for its optional providers (``paxm remember``, MCP) keeps
    # its own source: attribution says who wrote it, and that was not a hook
    sources = {i.source for i in items}
    own = len(sources) == 1 and first.source and not first.source.startswith("hook")
    source = first.source if own else "hook:episode"
    if own and not multiple and len(items) == 1 and first.id:
        item_id = first.id  # the write's own id: a late direct write and this copy are one memory
    return MemoryItem(
        "\n\n".join([i.text.strip() for i in items]),
        item_id,
        source,
        metadata,
        created,
        tier,
        parse_time(expiry) if expiry else None,
        first.origin if origin is None else origin,
        first.scope if scope is None else scope,
        first.provenance if provenance is None else provenance,
        admission,
        turn,
    )


def _group_metadata(episode: dict[str, Any], items: list[MemoryItem]) -> dict[str, str]:
    """The events' metadata merged (later events win, as upstream), then the episode's own keys."""
    metadata: dict[str, str] = {}
    anchored = 0
    for item in items:
        if item.metadata:
            metadata.update(item.metadata)  # later events win, as upstream
            anchored += "paxm_anchors" in item.metadata
    if anchored > 1:  # code anchors are the union of the events' (paxm_core.anchors)
        from paxm_core.anchors import ANCHORS_KEY, merge_anchor_values

        metadata[ANCHORS_KEY] = merge_anchor_values(
            i.metadata[ANCHORS_KEY] for i in items if i.metadata and ANCHORS_KEY in i.metadata
        )
    if metadata:
        for name in RESERVED_METADATA:
            metadata.pop(name, None)
    metadata["paxm_episode_id"] = episode["id"]
    metadata["paxm_episode_complete"] = "true" if episode["complete"] else "false"
    metadata["paxm_episode_events"] = str(len(episode["events"]))
    metadata["paxm_session_key"] = episode["session_key"]
    metadata["paxm_episode_checksum"] = episode["checksum"]
    if episode.get("missing_sequences"):
        metadata["paxm_missing_sequences"] = ",".join(str(s) for s in episode["missing_sequences"])
    if episode.get("integrity_errors"):
        metadata["paxm_integrity_errors"] = ",".join(episode["integrity_errors"])
    return metadata
