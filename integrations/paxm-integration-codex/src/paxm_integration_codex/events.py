"""Codex's native hook events and the paxm events they map to."""

from __future__ import annotations

from dataclasses import dataclass

from paxm_core.integration import EVENT_PRE_TOOL, EVENT_SESSION_START, EVENT_TOOL_USE, EVENT_TURN_END, EVENT_USER_INPUT

__all__ = ["HOOK_TIMEOUT", "NATIVE_EVENTS", "PRE_TOOL_MATCHER", "NativeEvent", "native_for", "normalized_event"]

#: seconds Codex waits for one paxm hook (Codex's own default is 600 s).  The hook client
#: answers within its 5 s ceiling even when the daemon hangs; this covers interpreter start-up
#: on a loaded machine on top of that.
HOOK_TIMEOUT = 10


@dataclass(frozen=True)
class NativeEvent:
    """One Codex hook event paxm can install."""

    native: str
    event: str
    snake: str
    status: str
    matcher: str = ""


#: The Codex tools a ``PreToolUse`` hook runs for (point of action): the shell (``Bash``) and
#: file edits (``apply_patch``; ``Edit``/``Write`` are the names Codex also matches it by).
PRE_TOOL_MATCHER = "Bash|apply_patch|Edit|Write"

#: Installation order (also the order of the keys paxm adds under ``[hooks]``).  Like every
#: event but ``SessionStart``, one is installed only when its recall or write is on in
#: ``agents.codex.hooks`` (``PreToolUse``: ``hooks.pre_tool.recall``, off in the defaults).
NATIVE_EVENTS: tuple[NativeEvent, ...] = (
    NativeEvent("SessionStart", EVENT_SESSION_START, "session_start", "paxm: session", "startup|resume|clear|compact"),
    NativeEvent("UserPromptSubmit", EVENT_USER_INPUT, "user_prompt_submit", "paxm: recall"),
    NativeEvent("PreToolUse", EVENT_PRE_TOOL, "pre_tool_use", "paxm: memory", PRE_TOOL_MATCHER),
    NativeEvent("PostToolUse", EVENT_TOOL_USE, "post_tool_use", "paxm: tool"),
    NativeEvent("Stop", EVENT_TURN_END, "stop", "paxm: capture"),
)

_BY_NATIVE = {e.native.lower(): e.event for e in NATIVE_EVENTS}
_BY_NATIVE.update({e.snake: e.event for e in NATIVE_EVENTS})
_NORMALIZED = {e.event for e in NATIVE_EVENTS}


def normalized_event(name: str) -> str:
    """The paxm event for a native name (``UserPromptSubmit`` -> ``user_input``)."""
    key = name.strip()
    if key in _NORMALIZED:
        return key
    return _BY_NATIVE.get(key.lower(), key)


def native_for(event: str) -> NativeEvent | None:
    """The native event installed for paxm ``event`` (``None`` if paxm installs none)."""
    return next((e for e in NATIVE_EVENTS if e.event == event), None)
