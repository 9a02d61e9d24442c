"""Synthetic Claude Code transcripts, record for record in the shape the real binary writes
(see ``integrations/paxm-integration-claude-code/tests/fixtures/claude-transcripts``), with the
parts a reader must leave out: thinking blocks, tool use and results, ``isMeta`` records,
sidechains, command wrappers, hook attachments carrying a recall envelope, a corrupt line.

Loaded by path (``tests/backfill/conftest.py`` and ``benchmarks/backfill_bench.py``).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ENVELOPE = '<paxm-recall version="1" mode="passive">\nRECALLED-SECRET-NEVER-STORE\n</paxm-recall>'
THINKING = "PRIVATE-REASONING-NEVER-STORE"
BASE_TIME = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def prompt_text(session: int, turn: int) -> str:
    """The prompt of turn ``turn`` of session ``session`` (tests look memories up by it)."""
    return f"Decision {session}-{turn}: use codename HERON-{session}-{turn} for the build cache."


def answer_text(session: int, turn: int) -> str:
    """The final answer of that turn."""
    return f"Understood: HERON-{session}-{turn} it is."


def session_records(session: int, turns: int, cwd: str, *, start: datetime = BASE_TIME) -> list[dict[str, Any]]:
    """The records of one session with ``turns`` finished turns."""
    sid = str(uuid.UUID(int=session + 1))
    common = {"sessionId": sid, "cwd": cwd, "version": "2.1.197", "userType": "external", "isSidechain": False}
    at = start + timedelta(days=session % 90, minutes=session)
    out: list[dict[str, Any]] = [{"type": "queue-operation", "operation": "enqueue", "timestamp": _stamp(at)}]
    parent = None
    for turn in range(turns):
        at += timedelta(seconds=30)
        uid = str(uuid.UUID(int=(session << 32) + turn + 1))
        out.append(
            {
                **common,
                "type": "user",
                "uuid": uid,
                "parentUuid": parent,
                "timestamp": _stamp(at),
                "message": {"role": "user", "content": prompt_text(session, turn)},
            }
        )
        out.append(
            {
                **common,
                "type": "attachment",
                "timestamp": _stamp(at),
                "attachment": {"type": "hook_success", "hookEvent": "UserPromptSubmit", "content": ENVELOPE},
            }
        )
        if turn % 3 == 0:
            out.append(
                {
                    **common,
                    "type": "user",
                    "isMeta": True,
                    "timestamp": _stamp(at),
                    "message": {"role": "user", "content": "<command-name>/status</command-name>"},
                }
            )
        msg = f"msg_{session}_{turn}"
        out.append(
            {
                **common,
                "type": "assistant",
                "timestamp": _stamp(at),
                "message": {
                    "id": f"{msg}_a",
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": THINKING, "signature": "x"},
                        {"type": "text", "text": "Let me look."},
                        {"type": "tool_use", "id": f"tu_{msg}", "name": "Bash", "input": {"command": "ls"}},
                    ],
                },
            }
        )
        out.append(
            {
                **common,
                "type": "user",
                "timestamp": _stamp(at),
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"tu_{msg}", "content": "README.md"}],
                },
            }
        )
        out.append(
            {
                **common,
                "type": "assistant",
                "isSidechain": True,
                "timestamp": _stamp(at),
                "message": {"id": f"{msg}_side", "role": "assistant", "content": [{"type": "text", "text": "side"}]},
            }
        )
        out.append(
            {
                **common,
                "type": "assistant",
                "timestamp": _stamp(at),
                "message": {
                    "id": f"{msg}_b",
                    "role": "assistant",
                    "content": [{"type": "text", "text": answer_text(session, turn)}],
                },
            }
        )
        parent = uid
    return out


def write_sessions(projects: Path, sessions: int, turns: int, *, cwd: str = "/work/project") -> int:
    """Write ``sessions`` transcripts of ``turns`` turns under ``projects``; returns the total turns."""
    project = projects / "-work-project"
    project.mkdir(parents=True, exist_ok=True)
    for session in range(sessions):
        records = session_records(session, turns, cwd)
        sid = records[1]["sessionId"]
        with (project / f"{sid}.jsonl").open("w", encoding="utf-8") as handle:
            for index, record in enumerate(records):
                handle.write(json.dumps(record) + "\n")
                if index == 3:
                    handle.write('{"type": "user", "message": {broken\n')  # a torn write
    return sessions * turns
