"""Context blocks a hook injects: session identity, local time and the passive recall envelope."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from paxm_core.envelope import escape_block_json, render_recall_markdown, wrap_block, wrap_recall_context

__all__ = ["identity_block", "local_time_block", "passive_recall_block"]


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


def passive_recall_block(hits: Sequence[Any]) -> str:
    """The passive envelope for ``hits`` (empty string when there are none)."""
    if not hits:
        return ""
    return wrap_recall_context("passive", "Relevant memory recalled by paxm:\n\n" + render_recall_markdown(list(hits)))
