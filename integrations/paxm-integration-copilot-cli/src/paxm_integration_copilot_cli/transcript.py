"""The reply of a finished Copilot CLI turn, read from the session's ``events.jsonl``.

``agentStop`` gives only ``transcriptPath``.  The session log is one JSON event per line
(``user.message``, ``assistant.message`` with ``content`` and ``toolRequests``, ``hook.start``,
...).  Only its tail is read (a long session's log grows without bound), lines that do not parse
are skipped (the file may be mid-write), and a missing file is no reply.  Only the visible
``content`` of assistant messages is taken: reasoning fields never leave this module.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MAX_TAIL_BYTES", "TRANSCRIPT_NAME", "TurnText", "last_turn"]

#: how much of the end of ``events.jsonl`` is read (one turn's events fit many times over)
MAX_TAIL_BYTES = 2 * 1024 * 1024
#: the only file name read: the hook payload names the path, and paxm reads nothing else
TRANSCRIPT_NAME = "events.jsonl"


@dataclass(frozen=True, slots=True)
class TurnText:
    """The last turn in a session log: the user's prompt and the final visible reply."""

    prompt: str = ""
    reply: str = ""


def _tail_lines(path: Path, limit: int) -> list[str]:
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        start = max(0, size - limit)
        handle.seek(start)
        data = handle.read(limit)
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line was cut by the seek
    return [line.decode("utf-8", errors="replace") for line in lines if line.strip()]


def _event(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def last_turn(transcript: str, *, limit: int = MAX_TAIL_BYTES) -> TurnText:
    """The last turn of ``transcript`` (a path to ``events.jsonl``); empty when unreadable."""
    path = Path(transcript)
    if path.name != TRANSCRIPT_NAME:
        return TurnText()
    try:
        if not path.is_file():
            return TurnText()
        lines = _tail_lines(path, limit)
    except OSError:
        return TurnText()
    prompt = ""
    reply = ""
    for line in lines:
        event = _event(line)
        if event is None:
            continue
        kind = event.get("type")
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        if kind == "user.message":
            content = data.get("content")
            prompt = content if isinstance(content, str) else ""
            reply = ""  # a new turn: what came before is not its reply
        elif kind == "assistant.message":
            content = data.get("content")
            if isinstance(content, str) and content.strip():
                reply = content.strip()
    return TurnText(prompt=prompt.strip(), reply=reply)
