"""A claim's envelope checks and rendering, for every shape of envelope.

A claim accepts an envelope's embedded events only when each equals its stored row;
``envelope_json`` writes what the canonical encoder writes; ``episode_items`` builds the same
items as the plain per-group rendering (kept here as the reference).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from paxm_core.api.timefmt import format_time, parse_time
from paxm_core.api.types import MemoryItem, MemoryOrigin, MemoryScope, Provenance, TurnContext
from paxm_core.capture._inbox import sha256_hex
from paxm_core.capture.episode import (
    RESERVED_METADATA,
    canonical_json,
    decode_event_payload,
    envelope_json,
    episode_items,
    event_payload_json,
)
from paxm_core.capture.queue import _check_embedded_events

_AWKWARD = ["plain", 'quote " in it', "back\\slash", "ünïcødé ✓", "tab\tnew\nline", "\x00\x1f", "", "  "]


def _event(rng: random.Random, n: int) -> dict[str, Any]:
    base = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    item = MemoryItem(
        text=rng.choice([f"turn {n} {rng.choice(_AWKWARD)}", "", "   ", f"note {n}"]),
        metadata=rng.choice(
            [{}, {"k": rng.choice(_AWKWARD)}, {"session_id": "s9", "turn_id": f"t{n}"}, {"paxm_episode_id": "x"}]
        ),
        created_at=rng.choice([None, base + timedelta(seconds=rng.randint(-50, 50))]),
        tier=rng.choice(["", "stm", "ltm"]),
        expires_at=rng.choice([None, None, base + timedelta(days=1)]),
        origin=rng.choice([MemoryOrigin(), MemoryOrigin(user_id=f"u{n}")]),
        scope=rng.choice([MemoryScope(), MemoryScope(type="repo", id=f"r{n}")]),
        provenance=rng.choice([Provenance(), Provenance(agent_id=f"a{n}")]),
        admission_text=rng.choice(["", "", " ", f"admit {n}"]),
    )
    decoded: dict[str, Any] = json.loads(event_payload_json(item, rng.choice(["default", "default", "work"])))
    return decoded


def _envelope(rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    events = [_event(rng, n) for n in range(rng.randint(1, 5))]
    texts = [canonical_json(e) for e in events]
    fields = {
        "id": "ep_" + rng.choice(["abc", 'ü"x', "a\\b"]),
        "session_key": rng.choice(["s1", "sé\n", ""]),
        "complete": rng.choice([True, False]),
        "missing_sequences": rng.choice([[], [1, 3], [2]]),
        "integrity_errors": rng.choice([[], ["invalid_final_sequence"], ["duplicate_sequence:2", "é"]]),
        "checksum": sha256_hex(b"x"),
        "captured_at": "2026-01-02T03:04:05.000000Z",
    }
    return {**fields, "events": events}, texts


def _rows(texts: list[str]) -> list[tuple[str, str, str]]:
    return [(t, sha256_hex(t.encode()), "2026-01-02T03:04:05.000000Z") for t in texts]


def test_embedded_copies_are_checked_against_their_rows() -> None:
    rng = random.Random(7)
    for _ in range(300):
        envelope, texts = _envelope(rng)
        fields = {k: v for k, v in envelope.items() if k != "events"}
        fields["checksum"] = sha256_hex("\n".join(sha256_hex(t.encode()) for t in texts).encode())
        payload = envelope_json(fields, texts)
        assert _check_embedded_events("ep", json.loads(payload), payload, _rows(texts)) == json.loads(payload)["events"]
        # the same content written another way (an older writer) passes the parse-and-compare check
        spaced = json.dumps(json.loads(payload), sort_keys=True)
        _check_embedded_events("ep", json.loads(spaced), spaced, _rows(texts))
        # an embedded copy that differs from its stored row is refused, even when every row
        # and the envelope's checksum over the rows' hashes are intact
        changed = envelope_json(fields, [*texts[:-1], canonical_json({**json.loads(texts[-1]), "x": "y"})])
        with pytest.raises(ValueError, match="does not match its checksum"):
            _check_embedded_events("ep", json.loads(changed), changed, _rows(texts))


def _encoded_envelope(fields: dict[str, Any], texts: list[str]) -> str:
    # the envelope as the encoder writes it (what envelope_json did before it quoted fields itself)
    return canonical_json({**fields, "events": [json.loads(t) for t in texts]})


class _Text(str):
    pass


def test_envelope_text_is_the_encoders_for_every_field_type() -> None:
    rng = random.Random(11)
    odd: list[dict[str, Any]] = [
        {},
        {"missing_sequences": [True]},
        {"missing_sequences": (1, 2)},
        {"integrity_errors": [None]},
        {"id": 7},
        {"complete": 1},
        {"captured_at": None},
        {"checksum": _Text("c")},
        {"extra": "x"},  # a key the queue never writes: the encoder sorts it in
    ]
    for _ in range(300):
        envelope, texts = _envelope(rng)
        fields = {k: v for k, v in envelope.items() if k != "events"}
        fields.update(rng.choice(odd))
        assert envelope_json(fields, texts) == _encoded_envelope(fields, texts)


# -- the reference rendering: one pass per step, as the queue first wrote it -------------


def _reference_items(episode: dict[str, Any], profiles: list[str]) -> list[MemoryItem]:
    wanted = set(profiles)
    events = [decode_event_payload(e) for e in episode["events"]]
    groups: dict[tuple[str, str, str], list[MemoryItem]] = {}
    for item, profile in events:
        if (wanted and profile not in wanted) or not item.text.strip():
            continue
        expiry = format_time(item.expires_at) if item.expires_at is not None else ""
        groups.setdefault((profile, item.tier, expiry), []).append(item)
    session_id, turn_id = episode["session_key"], episode["id"]
    stamps = [i.created_at for i, _ in events if i.created_at is not None]
    for item, _ in events:
        session_id = (item.metadata.get("session_id") or "").strip() or session_id
        turn_id = (item.metadata.get("turn_id") or "").strip() or turn_id
    turn = TurnContext(session_id, turn_id, min(stamps) if stamps else None, max(stamps) if stamps else None)
    out = []
    for key in sorted(groups):
        profile, tier, expiry = key
        items = groups[key]
        metadata: dict[str, str] = {}
        for item in items:
            metadata.update(item.metadata)
        for name in RESERVED_METADATA:
            metadata.pop(name, None)
        metadata["paxm_episode_id"] = episode["id"]
        metadata["paxm_episode_complete"] = "true" if episode["complete"] else "false"
        metadata["paxm_episode_events"] = str(len(episode["events"]))
        metadata["paxm_session_key"] = episode["session_key"]
        metadata["paxm_episode_checksum"] = episode["checksum"]
        if episode["missing_sequences"]:
            metadata["paxm_missing_sequences"] = ",".join(str(s) for s in episode["missing_sequences"])
        if episode["integrity_errors"]:
            metadata["paxm_integrity_errors"] = ",".join(episode["integrity_errors"])
        item_id = episode["id"]
        if len(groups) > 1:
            item_id += "_" + sha256_hex(f"{profile}\x00{tier}\x00{expiry}".encode())[:12]
        created = [i.created_at for i in items if i.created_at is not None]

        def first_set(values: list[Any]) -> Any:
            return next((v for v in values if not v.is_empty()), values[0])

        out.append(
            MemoryItem(
                "\n\n".join(i.text.strip() for i in items),
                item_id,
                "hook:episode",
                metadata,
                min(created) if created else None,
                tier,
                parse_time(expiry) if expiry else None,
                first_set([i.origin for i in items]),
                first_set([i.scope for i in items]),
                first_set([i.provenance for i in items]),
                next((i.admission_text for i in items if i.admission_text.strip()), ""),
                turn,
            )
        )
    return out


def test_episode_items_match_the_reference_rendering() -> None:
    rng = random.Random(11)
    groups_seen = set()
    for _ in range(400):
        envelope, _ = _envelope(rng)
        profiles = rng.choice([[], ["default"], ["work"], ["default", "work"]])
        got = episode_items(envelope, profiles)
        assert got == _reference_items(envelope, profiles)
        assert [i.turn for i in got] == [i.turn for i in _reference_items(envelope, profiles)]
        assert [i.admission_text for i in got] == [i.admission_text for i in _reference_items(envelope, profiles)]
        groups_seen.add(len(got))
    assert {0, 1, 2} <= groups_seen  # empty, single-group and multi-group episodes were all built
