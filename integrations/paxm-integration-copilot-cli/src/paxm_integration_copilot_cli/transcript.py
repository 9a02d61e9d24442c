"""The reply of a finished Copilot CLI turn, read from the tail of the session's ``events.jsonl``.

Only the visible ``content`` of assistant messages is taken.  Copilot appends to the log
asynchronously, and the ``hook.start`` line of the ``agentStop`` call comes after the reply, so
:func:`wait_for_turn` re-reads the tail until that line is there, for a bounded time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from paxm_core.integration import tail_json_records

__all__ = ["MAX_TAIL_BYTES", "MAX_WAIT_SECONDS", "TRANSCRIPT_NAME", "TurnText", "last_turn", "wait_for_turn"]

#: how much of the end of ``events.jsonl`` is read (one turn's events fit many times over)
MAX_TAIL_BYTES = 2 * 1024 * 1024
#: the only file name read: the hook payload names the path, and paxm reads nothing else
TRANSCRIPT_NAME = "events.jsonl"
#: how long :func:`wait_for_turn` waits for Copilot to finish writing the turn
MAX_WAIT_SECONDS = 3.0  # within the hook client's 5 s default, with room for a loaded machine


@dataclass(frozen=True, slots=True)
class TurnText:
    """The last turn in a session log: the user's prompt and the final visible reply."""

    prompt: str = ""
    reply: str = ""
    stopped: bool = False


def last_turn(transcript: str, *, limit: int = MAX_TAIL_BYTES) -> TurnText:
    """The last turn of ``transcript`` (a path to ``events.jsonl``); empty when unreadable."""
    path = Path(transcript)
    try:
        if path.name != TRANSCRIPT_NAME or not path.is_file():  # never a FIFO or a directory
            return TurnText()
    except OSError:
        return TurnText()
    prompt, reply, stopped = "", "", False
    for event in tail_json_records(path, limit, replace_invalid=True):
        kind = event.get("type")
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        if kind == "user.message":
            content = data.get("content")
            prompt = content if isinstance(content, str) else ""
            reply = ""  # a new turn: what came before is not its reply
            stopped = False
        elif kind == "assistant.message":
            content = data.get("content")
            if isinstance(content, str) and content.strip():
                reply = content.strip()
        elif kind == "hook.start" and data.get("hookType") == "agentStop":
            stopped = True
    return TurnText(prompt=prompt.strip(), reply=reply, stopped=stopped)


def wait_for_turn(transcript: str, *, timeout: float = MAX_WAIT_SECONDS, poll: float = 0.05) -> TurnText:
    """:func:`last_turn`, re-read until the turn is on disk (``stopped``) or ``timeout`` passes.

    A missing file is waited for while its session directory exists (Copilot writes it
    asynchronously); a wrong name or a gone directory is not.
    """
    path = Path(transcript)
    deadline = time.monotonic() + timeout
    while True:
        turn = last_turn(transcript)
        if turn.stopped or path.name != TRANSCRIPT_NAME or time.monotonic() >= deadline:
            return turn
        if not path.is_file() and not path.parent.is_dir():
            return turn
        time.sleep(poll)
