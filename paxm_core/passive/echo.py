"""Echo suppression: paxm's own output is never written back as if it were new.

Before any hook write, paxm's injected blocks (in whatever encoding the harness gives them
back) are cut out of the event, and paxm's own recall tool exchanges (MCP ``paxm_recall``,
``paxm recall`` through a shell, results carrying ``paxm_context.kind == "recall"``) are dropped.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace

from paxm_core.api.events import HookEvent, HookMessage
from paxm_core.envelope import strip_recall_context

__all__ = ["drop_recall_tool_exchanges", "is_recall_command", "strip_event"]

#: message roles of a tool call and of a tool result, as harnesses spell them (compose.py reads them too)
CALL_ROLES = frozenset({"tool_call", "toolcall", "tool_use", "function_call"})
RESULT_ROLES = frozenset(
    {"tool", "tool_result", "toolresult", "tool_response", "function_call_output", "function_result"}
)
_RECALL_KIND = re.compile(r'"kind"\s*:\s*"recall"')


def _unquote(word: str) -> str:
    return word.strip("\"'")


def is_recall_command(command: str) -> bool:
    """True for ``[env] [VAR=x ...] paxm [--config X] [flags] recall ...`` (any path to ``paxm``)."""
    words = command.split()
    i = 0
    if words and os.path.basename(_unquote(words[0])) == "env":
        i += 1
    while i < len(words) and "=" in words[i] and not words[i].startswith("-"):
        i += 1
    if i >= len(words) or os.path.basename(_unquote(words[i])) != "paxm":
        return False
    i += 1
    while i < len(words):
        word = _unquote(words[i])
        if word in ("--config", "-c"):
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        return word == "recall"
    return False


def _is_recall_tool_name(name: str) -> bool:
    name = name.strip().lower()
    return name == "paxm_recall" or name.endswith("__paxm_recall")


def _is_recall_call(message: HookMessage) -> bool:
    if _is_recall_tool_name(message.source):
        return True
    text = message.text.strip()
    name, _, args = text.partition(" ")
    if _is_recall_tool_name(name):
        return True
    if os.path.basename(name.strip()).lower() == "bash":
        try:
            parsed = json.loads(args.strip())
        except (ValueError, RecursionError):
            return False
        command = parsed.get("command") if isinstance(parsed, dict) else None
        return isinstance(command, str) and is_recall_command(command)
    return is_recall_command(text)


def _is_recall_result(message: HookMessage) -> bool:
    text = message.text.strip()
    if not text.startswith("{") or not _RECALL_KIND.search(text):
        return False
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(parsed, dict):
        return False
    context = parsed.get("paxm_context")
    if isinstance(context, dict) and context.get("kind") == "recall":
        return True
    # Claude's PostToolUse wraps a Bash result as {"stdout": "<recall --json output>", ...}
    stdout = parsed.get("stdout")
    return isinstance(stdout, str) and _is_recall_result(HookMessage("tool_result", stdout))


def drop_recall_tool_exchanges(messages: list[HookMessage]) -> list[HookMessage]:
    """Drop paxm recall tool calls, the results that follow them, and recall-shaped results."""
    out: list[HookMessage] = []
    dropping = False
    for message in messages:
        role = message.role.strip().lower()
        if role in RESULT_ROLES:
            keep = not dropping and not _is_recall_result(message)
        else:
            dropping = role in CALL_ROLES and _is_recall_call(message)
            keep = not dropping
        if keep:
            out.append(message)
    return out


def strip_event(event: HookEvent) -> HookEvent:
    """A copy of ``event`` with paxm's blocks and recall tool exchanges removed.

    ``raw`` (what ``{{ .raw_json }}`` renders) is stripped too: inside its JSON strings the
    blocks are JSON-escaped, which the rule recognises, and a cut never splits an escape.
    """
    messages = [
        HookMessage(m.role, strip_recall_context(m.text), m.source) for m in drop_recall_tool_exchanges(event.messages)
    ]
    return replace(
        event,
        query=strip_recall_context(event.query),
        prompt=strip_recall_context(event.prompt),
        assistant=strip_recall_context(event.assistant),
        messages=[m for m in messages if m.text],
        raw=strip_recall_context(event.raw),
    )
