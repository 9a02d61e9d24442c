"""Codex's stored sessions (rollout JSONL files) read back as finished turns, for backfill.

Where: ``$PAXM_CODEX_SESSIONS``, else ``$CODEX_HOME/sessions``, else ``~/.codex/sessions``.
A rollout has a ``session_meta`` record, then per turn ``event_msg`` ``task_started``, the
turn's ``response_item`` records and ``task_complete`` (older releases: ``user_message`` /
``agent_message``; both are read).  ``developer`` items (paxm's recalled context), Codex's
wrapper messages and reasoning are never read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from paxm_core.integration import (
    HookMessage,
    PastTurn,
    content_text,
    iso_epoch,
    jsonl_files,
    past_turn,
    transcript_records,
)
from paxm_integration_codex.config_toml import codex_home
from paxm_integration_codex.rollout import str_field, tool_message

__all__ = ["read_turns", "sessions_dir", "transcript_files"]

_SOURCE = "codex_backfill"
_MAX_LINE = 16 * 1024 * 1024


def sessions_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The directory Codex keeps its session rollouts in."""
    env = os.environ if environ is None else environ
    explicit = env.get("PAXM_CODEX_SESSIONS", "").strip()
    return Path(explicit).expanduser().absolute() if explicit else codex_home(env) / "sessions"


def transcript_files(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Every rollout file, sorted (an absent directory gives ``[]``)."""
    return jsonl_files(sessions_dir(environ))


def _is_wrapper(text: str) -> bool:
    """Codex's own context messages sent as ``role: user`` (environment, AGENTS.md ...)."""
    stripped = text.strip()
    return (stripped.startswith("<") and stripped.endswith(">")) or stripped.startswith("# AGENTS.md")


@dataclass
class _Turn:
    turn_id: str = ""
    started: float = 0.0
    user: str = ""
    assistant: str = ""
    tools: list[HookMessage] = field(default_factory=list)


def _past_turn(path: Path, session: str, workspace: str, turn: _Turn, fallback_time: float) -> PastTurn | None:
    if not turn.user.strip() or not turn.assistant.strip():
        return None
    started = turn.started or fallback_time
    user, assistant = HookMessage("user", turn.user, _SOURCE), HookMessage("assistant", turn.assistant, _SOURCE)
    return past_turn(
        "codex",
        "Stop",
        ("codex", session, f"{started:.3f}", turn.user, turn.assistant),
        path=path,
        session=session,
        prompt=turn.user,
        answer=turn.assistant,
        started=started,
        workspace=workspace,
        messages=[user, *turn.tools, assistant],
        metadata={"turn_id": turn.turn_id} if turn.turn_id else None,
    )


def read_turns(path: Path) -> Iterator[PastTurn]:
    """The finished turns of one rollout file, in order; tolerant of partial or corrupt files."""
    fallback_time, records = transcript_records(path, _MAX_LINE)
    session = path.stem
    workspace = ""
    turn: _Turn | None = None
    for record in records:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        kind, rtype = str_field(payload, "type"), str_field(record, "type")
        if rtype == "session_meta":
            session = str_field(payload, "id") or session
            workspace = str_field(payload, "cwd") or workspace
            continue
        if rtype == "event_msg" and kind in ("task_started", "user_message"):
            if kind == "task_started" or turn is None or turn.assistant:
                if turn is not None and turn.assistant:
                    done = _past_turn(path, session, workspace, turn, fallback_time)
                    if done is not None:
                        yield done
                turn = _Turn(turn_id=str_field(payload, "turn_id"), started=iso_epoch(str_field(record, "timestamp")))
            if kind == "user_message" and str_field(payload, "message").strip():
                turn.user = str_field(payload, "message").strip()
            continue
        if turn is None:
            continue
        if rtype == "event_msg" and kind == "agent_message" and str_field(payload, "phase") != "commentary":
            turn.assistant = turn.assistant or str_field(payload, "message").strip()
        elif rtype == "event_msg" and kind == "task_complete":
            turn.assistant = str_field(payload, "last_agent_message").strip() or turn.assistant
            done = _past_turn(path, session, workspace, turn, fallback_time)
            if done is not None:
                yield done
            turn = None
        elif rtype == "response_item" and kind == "message":
            text = content_text(payload.get("content"), ("input_text", "output_text", "text"))
            role = str_field(payload, "role")
            if role == "user" and text and not _is_wrapper(text) and not turn.user:
                turn.user = text
            elif role == "assistant" and text and str_field(payload, "phase") != "commentary":
                turn.assistant = text
        elif rtype == "response_item" and (message := tool_message(kind, payload, _SOURCE)) is not None:
            turn.tools.append(message)
    if turn is not None and turn.assistant:
        done = _past_turn(path, session, workspace, turn, fallback_time)
        if done is not None:
            yield done
