"""Kimi Code's session log (``wire.jsonl``): find a session's file and read its last finished turn.

Kimi's ``Stop`` hook payload carries no reply, so the turn is read back from the session's
``<home>/sessions/<workspace>/<session id>/agents/main/wire.jsonl``.  The file grows with the
session (system prompt and tool snapshots included), so only its tail is read (at most
:data:`TAIL_BYTES`), a partial first or last line is skipped, and anything unexpected gives an
empty turn: a capture never fails because of this file.  Reasoning (``think`` parts) and tool
calls are never part of the turn; only visible text is.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paxm_core.integration import content_text, tail_json_records

__all__ = ["MAX_WAIT_SECONDS", "TAIL_BYTES", "WireTurn", "find_wire", "last_turn", "read_tail", "wait_for_turn"]

#: how much of the end of ``wire.jsonl`` is read; one turn's visible text is far smaller
TAIL_BYTES = 4 * 1024 * 1024
#: how long :func:`wait_for_turn` waits for Kimi to write the turn whose ``Stop`` hook runs
MAX_WAIT_SECONDS = 3.0  # within the hook client's 5 s default, with room for a loaded machine
#: a Kimi session id (``session_<uuid>``): anything else is never put into a path
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


@dataclass(slots=True)
class WireTurn:
    """The visible text of one finished turn: the user's prompt and the assistant's replies."""

    prompt: str = ""
    replies: list[str] = field(default_factory=list)
    turn_id: str = ""

    @property
    def assistant(self) -> str:
        """The final reply (what the user saw last)."""
        return self.replies[-1] if self.replies else ""


def find_wire(home: Path, session_id: str) -> Path | None:
    """``wire.jsonl`` of ``session_id`` under Kimi's ``home`` (``None`` when absent or the id is odd)."""
    if not _SESSION_ID.match(session_id) or ".." in session_id:
        return None
    sessions = home / "sessions"
    try:
        workspaces = [p for p in sessions.iterdir() if p.is_dir()]
    except OSError:
        return None
    for workspace in workspaces:
        candidate = workspace / session_id / "agents" / "main" / "wire.jsonl"
        if candidate.is_file():
            return candidate
    return None


def read_tail(path: Path, limit: int = TAIL_BYTES) -> list[dict[str, Any]]:
    """The JSON objects in the last ``limit`` bytes of ``path`` (partial and bad lines skipped)."""
    return tail_json_records(path, limit)


def _appended(entry: dict[str, Any]) -> tuple[str, str, str] | None:
    """``(role, source, text)`` of an ``agent.message.appended`` entry."""
    if entry.get("type") != "agent.message.appended":
        return None
    outer = entry.get("message")
    inner = outer.get("message") if isinstance(outer, dict) else None
    if not isinstance(inner, dict):
        return None
    meta = outer.get("meta") if isinstance(outer, dict) else None
    source = str(meta.get("source") or "") if isinstance(meta, dict) else ""
    return str(inner.get("role") or ""), source, content_text(inner.get("content"))


def last_turn(entries: list[dict[str, Any]]) -> WireTurn:
    """The last turn in ``entries`` that has ended (a turn still running is not captured)."""
    return _scan(entries)[0]


def wait_for_turn(path: Path, *, timeout: float = MAX_WAIT_SECONDS, poll: float = 0.05) -> WireTurn:
    """The last ended turn of ``path``, once no later turn is still being written.

    Kimi writes ``wire.jsonl`` asynchronously: when ``Stop`` runs, the turn's reply may not be on
    disk yet, and reading at once would store the previous turn again.
    """
    deadline = time.monotonic() + timeout
    while True:
        ended, running = _scan(read_tail(path))
        if not running or time.monotonic() >= deadline:
            return ended
        time.sleep(poll)


def _scan(entries: list[dict[str, Any]]) -> tuple[WireTurn, bool]:
    """``(last ended turn, whether a later turn has started and not ended)``."""
    current: WireTurn | None = None
    ended: list[WireTurn] = []
    for entry in entries:
        kind = entry.get("type")
        if kind == "turn.prompt" and entry.get("agentId", "main") == "main":
            origin = entry.get("origin")
            if isinstance(origin, dict) and origin.get("kind") not in (None, "user"):
                continue
            current = WireTurn(prompt=content_text(entry.get("input")), turn_id=str(entry.get("turnId", "")))
            continue
        appended = _appended(entry)
        if appended is not None:
            role, source, text = appended
            if role == "assistant" and source in ("llm", "") and text:
                if current is None:  # the tail began inside a turn
                    current = WireTurn()
                current.replies.append(text)
            continue
        # Kimi runs the Stop hook after ``agent.turn.ended`` but before ``turn.ended``
        if (
            kind in ("agent.turn.ended", "turn.ended")
            and entry.get("agentId", "main") == "main"
            and current is not None
        ):
            ended.append(current)
            current = None
    return (ended[-1] if ended else WireTurn()), current is not None
