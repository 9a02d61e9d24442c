"""Pi's stored sessions (``<agent dir>/sessions/<cwd>/<time>_<id>.jsonl``) as past turns, for backfill.

Where: ``$PAXM_PI_SESSIONS``, else ``<agent dir>/sessions`` (``$PAXM_PI_AGENT_DIR``,
``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``).  After the ``session`` header each line is an entry
(a session is a tree, every entry in the file once, in order).  A turn starts at a ``user``
message; its answer is its last assistant text, its tool calls and results are kept as the live
extension keeps them.  ``thinking`` parts and ``custom_message`` entries (paxm's recalled
context) are never read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paxm_core.integration import (
    HookMessage,
    PastTurn,
    content_text,
    iso_epoch,
    jsonl_files,
    past_turn,
    transcript_records,
)

__all__ = ["agent_dir", "read_turns", "sessions_dir", "transcript_files"]

_SOURCE = "pi_backfill"
#: one session line larger than this is skipped (read in bounded pieces, never held whole)
MAX_LINE = 16 * 1024 * 1024
#: the live extension's bounds: characters of one message, messages kept per turn
MAX_TEXT = 64 * 1024
MAX_MESSAGES = 20
_AGENT_DIR_ENV = ("PAXM_PI_AGENT_DIR", "PI_CODING_AGENT_DIR")


def agent_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Pi's agent dir (``$PAXM_PI_AGENT_DIR`` > ``$PI_CODING_AGENT_DIR`` > ``~/.pi/agent``)."""
    env = os.environ if environ is None else environ
    for var in _AGENT_DIR_ENV:
        value = env.get(var, "").strip()
        if value:
            return Path(value).expanduser().absolute()
    return Path(env.get("HOME") or Path.home()).absolute() / ".pi" / "agent"


def sessions_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The directory Pi keeps its session files in."""
    env = os.environ if environ is None else environ
    explicit = env.get("PAXM_PI_SESSIONS", "").strip()
    return Path(explicit).expanduser().absolute() if explicit else agent_dir(env) / "sessions"


def transcript_files(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Every session file, sorted (an absent directory gives ``[]``)."""
    return jsonl_files(sessions_dir(environ))


def _str(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _epoch(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value) / 1000.0 if value > 1e11 else float(value)  # Pi's message times are ms
    return iso_epoch(value)


def _clip(text: str) -> str:
    text = text.strip()
    return text[:MAX_TEXT] if len(text) > MAX_TEXT else text


def _text(content: Any) -> str:
    return _clip(content_text(content))


def _tool_call(part: Mapping[str, Any]) -> str:
    name = _str(part, "name").strip() or "tool"
    args = part.get("arguments")
    if args is None or args == {}:
        return name
    try:
        dumped = args if isinstance(args, str) else json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return name
    return _clip(f"{name} {dumped}")


@dataclass
class _Turn:
    key: str
    prompt: str
    started: float
    answer: str = ""
    messages: list[HookMessage] = field(default_factory=list)

    def add(self, role: str, text: str) -> None:
        if not text or (self.messages and self.messages[-1].role == role and self.messages[-1].text == text):
            return
        self.messages.append(HookMessage(role, text, _SOURCE))
        if len(self.messages) > MAX_MESSAGES:  # the live bound: the oldest go first
            del self.messages[0]


def _past_turn(path: Path, session: str, workspace: str, turn: _Turn) -> PastTurn | None:
    if not turn.prompt or not turn.answer:
        return None
    return past_turn(
        "pi",
        "agent_end",
        ("pi", session, turn.key, turn.prompt),
        path=path,
        session=session,
        prompt=turn.prompt,
        answer=turn.answer,
        started=turn.started,
        workspace=workspace,
        messages=turn.messages,
        captured_at=turn.started,
    )


def read_turns(path: Path) -> Iterator[PastTurn]:
    """The finished turns of one session file, in order; tolerant of partial or corrupt files."""
    fallback_time, records = transcript_records(path, MAX_LINE)
    session = path.stem.rsplit("_", 1)[-1]  # ``<time>_<id>.jsonl``; the header's id wins
    workspace = ""
    turn: _Turn | None = None
    for record in records:
        kind = _str(record, "type")
        if kind == "session":
            session = _str(record, "id") or session
            workspace = _str(record, "cwd") or workspace
            continue
        message = record.get("message")
        if kind != "message" or not isinstance(message, dict):
            continue  # custom_message (paxm's recall), compaction, model changes ...
        role = _str(message, "role")
        if role == "user":
            prompt = _text(message.get("content"))
            if not prompt:
                continue
            if turn is not None:
                done = _past_turn(path, session, workspace, turn)
                if done is not None:
                    yield done
            started = _epoch(record.get("timestamp")) or _epoch(message.get("timestamp")) or fallback_time
            turn = _Turn(_str(record, "id") or f"{started:.3f}", prompt, started)
            turn.add("user", prompt)
        elif turn is None:
            continue
        elif role == "assistant":
            content = message.get("content")
            text = _text(content)
            if text:
                turn.add("assistant", text)
                turn.answer = text
            for part in content if isinstance(content, list) else []:
                if isinstance(part, dict) and part.get("type") == "toolCall":
                    turn.add("tool_call", _tool_call(part))
        elif role == "toolResult":
            text = _text(message.get("content"))
            if text:
                turn.add("tool_result", f"Error: {text}" if message.get("isError") is True else text)
    if turn is not None:
        done = _past_turn(path, session, workspace, turn)
        if done is not None:
            yield done
