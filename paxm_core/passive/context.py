"""Context blocks a hook injects: session identity, local time and the passive recall envelope."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime

from paxm_core.envelope import escape_block_json, guard_memory_text, header_field, wrap_block, wrap_recall_context

__all__ = ["DEFAULT_PASSIVE_MAX_CHARS", "identity_block", "local_time_block", "passive_recall_block"]


def identity_block(user_id: str, agent_id: str, session_id: str) -> str:
    """``<paxm-session-identity version="1">`` with ``{"user_id","agent_id","session_id"}``."""
    payload = json.dumps(
        {
            "user_id": user_id.strip(),
            "agent_id": agent_id.strip() or "unknown",
            "session_id": session_id.strip() or "unknown",
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return wrap_block("paxm-session-identity", 'version="1"', escape_block_json(payload))


def _zone_name(now: datetime) -> str:
    tzinfo = now.tzinfo
    key = getattr(tzinfo, "key", None)  # zoneinfo.ZoneInfo carries the IANA name
    if isinstance(key, str) and key:
        return key
    return now.tzname() or time.tzname[0] or "UTC"


def local_time_block(now: datetime | None = None) -> str:
    """``<paxm-local-time version="1">`` with the local RFC 3339 time and zone name."""
    moment = (now or datetime.now()).astimezone() if (now is None or now.tzinfo is None) else now
    payload = json.dumps(
        {"local_time": moment.replace(microsecond=0).isoformat(), "time_zone": _zone_name(moment)},
        separators=(",", ":"),
    )
    return wrap_block("paxm-local-time", 'version="1"', escape_block_json(payload))


#: Default cap on one prompt's injected recall block: well under Claude Code's 10,000-character
#: limit for hook context (beyond it the context is moved into a file the model may not read).
DEFAULT_PASSIVE_MAX_CHARS = 6000
#: Smallest excerpt worth injecting for the hit that does not fit whole.
MIN_EXCERPT_CHARS = 120
_HEADER = "Relevant memory recalled by paxm:\n\n"
_CUT = " [...]"


def _render_passive_hit(index: int, hit: object, text: str, note: str = "") -> str:
    # Only what helps the model judge a memory: where it came from.  Scores, relevance, scope and
    # user lines cost ~120 characters per hit and say nothing the order does not already say.
    # provider, source and text are stored data: none may start a header line of its own
    provider = header_field(str(getattr(hit, "provider", "") or "").strip())
    source = header_field(str(getattr(hit, "source", "") or "").strip())
    # note: freshness / supersession attributes (paxm_core.hit_notes), on the one unforgeable line
    head = f"### Memory {index}" + (f" ({provider})" if provider else "") + header_field(note)
    lines = [head]
    if source:
        lines.append(f"Source: {source}")
    return "\n".join(lines) + "\n\n" + guard_memory_text(text) + "\n\n"


def _block(parts: list[str]) -> str:
    return wrap_recall_context("passive", _HEADER + "".join(parts))


def passive_recall_block(hits: Sequence[object], *, max_chars: int = 0, notes: Sequence[str] = ()) -> str:
    """The passive envelope for ``hits`` (empty string when there are none), at most ``max_chars``.

    Hits arrive ranked; whole hits are kept in order while the block fits, then the next one is
    excerpted if a useful excerpt fits.  The same hits always give the same bytes (no clock, no
    scores), so a harness's prompt cache is not broken by paxm.

    :param max_chars: cap on the whole block, envelope included (0: :data:`DEFAULT_PASSIVE_MAX_CHARS`).
    :param notes: heading attributes per hit (:meth:`paxm_core.hit_notes.HitNote.attributes`).
    """
    cap = max_chars if max_chars > 0 else DEFAULT_PASSIVE_MAX_CHARS
    parts: list[str] = []
    for position, hit in enumerate(hits):
        text = str(getattr(hit, "text", "") or "").strip()
        if not text:
            continue
        note = notes[position] if position < len(notes) else ""
        whole = _render_passive_hit(len(parts) + 1, hit, text, note)
        if len(_block([*parts, whole])) <= cap:
            parts.append(whole)
            continue
        # the longest prefix that fits (binary search: escaping makes length non-linear)
        low, high, best = MIN_EXCERPT_CHARS, len(text) - 1, ""
        while low <= high:
            mid = (low + high) // 2
            piece = _render_passive_hit(len(parts) + 1, hit, text[:mid].rstrip() + _CUT, note)
            if len(_block([*parts, piece])) <= cap:
                best, low = piece, mid + 1
            else:
                high = mid - 1
        if best:
            parts.append(best)
        break
    if not parts:
        return ""
    return _block(parts)
