"""The tool calls and results of the current Codex turn, read from its rollout transcript.

Only the tail of the rollout is read (:data:`TAIL_BYTES`: a long session's file grows to many
megabytes), and a Stop payload's ``turn_id`` picks its own turn when ``task_started`` records
carry ids, so an event replayed later still gets its own tools.  Reasoning items are never read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from paxm_core.integration import HookMessage, tail_json_records, value_text

__all__ = ["SOURCE", "TAIL_BYTES", "str_field", "tool_message", "turn_tool_messages"]

#: how much of the rollout's end is read; one turn's tool traffic is far smaller than this
TAIL_BYTES = 16 * 1024 * 1024
SOURCE = "codex_transcript"
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})


def str_field(obj: Mapping[str, Any], key: str) -> str:
    """``obj[key]`` when it is a string, else ``""``."""
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def tool_message(kind: str, payload: Mapping[str, Any], source: str = SOURCE) -> HookMessage | None:
    """The call (name and arguments) or result a ``response_item`` of type ``kind`` holds, if any."""
    if kind in _CALLS:
        name = (str_field(payload, "name") or str_field(payload, "namespace")).strip()
        args = next((payload[k] for k in ("arguments", "input", "action") if payload.get(k) is not None), None)
        role, text = "tool_call", " ".join(p for p in (name, value_text(args)) if p).strip()
    elif kind in _OUTPUTS:
        role, text = "tool_result", value_text(payload.get("output"))
    else:
        return None
    return HookMessage(role, text, source) if text else None


def turn_tool_messages(path: str, turn_id: str = "", *, limit: int = TAIL_BYTES) -> list[HookMessage]:
    """Tool calls/results of one turn of the rollout at ``path`` (missing or corrupt -> ``[]``)."""
    turns: list[tuple[str, list[HookMessage]]] = [("", [])]
    for record in tail_json_records(os.path.expanduser(path), limit):
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        kind = str_field(payload, "type").lower()
        if record.get("type") == "event_msg" and kind == "task_started":
            turns.append((str_field(payload, "turn_id"), []))
            continue
        if record.get("type") != "response_item":
            continue
        message = tool_message(kind, payload)
        if message is not None:
            turns[-1][1].append(message)
    if turn_id:
        for tid, messages in reversed(turns):
            if tid and tid == turn_id:
                return messages
    return turns[-1][1]
