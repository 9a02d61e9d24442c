"""Injection receipts: why each passive injection happened (``paxm history --injections``; docs/impact.md).

The passive runtime logs one ``injection`` event per prompt that put memories into a session or
withheld ones it already had; they live in the rotating event log and age out with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from paxm_core.api.json import JSONObject

if TYPE_CHECKING:
    from paxm_core.telemetry.recorder import Telemetry

__all__ = ["injection_events", "render_injections"]

#: events read back from the log to find receipts (the log holds at most a few thousand)
_SCAN = 100_000


def injection_events(telemetry: Telemetry, limit: int = 20) -> list[JSONObject]:
    """The last ``limit`` injection receipts, oldest first."""
    if limit <= 0:
        return []
    found = [e for e in telemetry.tail(_SCAN) if e.get("kind") == "injection"]
    return found[-limit:]


def _memory_line(memory: Mapping[str, Any]) -> str:
    parts = [f"  #{memory.get('position', '?')}", f"rank {memory.get('rank', '?')}"]
    parts.append(f"{memory.get('provider', '')}:{memory.get('id', '')}")
    parts.append(f"relevance {float(memory.get('relevance') or 0):.3f}")
    parts.append(f"score {float(memory.get('score') or 0):.3f}")
    if "raw_score" in memory:
        kind = f" ({memory['raw_score_kind']})" if memory.get("raw_score_kind") else ""
        parts.append(f"raw {float(memory['raw_score']):.3f}{kind}")
    terms = memory.get("matched_terms") or []
    parts.append("terms: " + (", ".join(str(t) for t in terms) if terms else "-"))
    for key in ("freshness", "freshness_reason", "stale_reason", "superseded_by"):
        if memory.get(key):
            parts.append(f"{key}={memory[key]}")
    return "  ".join(parts)


def render_injections(events: Iterable[Mapping[str, Any]]) -> str:
    """The human-readable receipts, one block per injection."""
    out: list[str] = []
    for event in events:
        query = event.get("query_preview") or (
            f"<hash {event.get('query_hash', '')}, {event.get('query_length', 0)} chars>"
            if event.get("query_hash")
            else "-"
        )
        head = (
            f"{event.get('time', '')}  {event.get('target', '')} {event.get('hook_event', '')}"
            f"  session {event.get('session', '') or '-'}  reason {event.get('reason', 'prompt')}"
        )
        out.append(head)
        out.append(f"  query: {query}")
        memories = event.get("memories") or []
        withheld = int(event.get("withheld_count") or 0)
        out.append(f"  injected {len(memories)}, withheld as already given {withheld}")
        out.extend(_memory_line(m) for m in memories if isinstance(m, Mapping))
        out.append("")
    if not out:
        return "No injections recorded.\n"
    return "\n".join(out)
