"""OpenCode's plugin hook points and the paxm events they map to."""

from __future__ import annotations

from paxm_core.generated_file import NativeEvent
from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
)

__all__ = ["NATIVE_EVENTS", "NativeEvent", "native_for", "normalized_event"]


#: OpenCode has no session-start hook: the plugin runs ``session_start`` before the first
#: ``chat.message`` of each session, so its native name is the paxm name.
NATIVE_EVENTS: tuple[NativeEvent, ...] = (
    NativeEvent(EVENT_SESSION_START, EVENT_SESSION_START),
    NativeEvent("chat.message", EVENT_USER_INPUT),
    NativeEvent("tool.execute.after", EVENT_TOOL_USE),
    NativeEvent("session.idle", EVENT_TURN_END),
)

_BY_NATIVE = {e.native: e.event for e in NATIVE_EVENTS}
_NORMALIZED = {e.event for e in NATIVE_EVENTS}


def normalized_event(name: str) -> str:
    """The paxm event for a native name (``chat.message`` -> ``user_input``); paxm names pass through."""
    key = name.strip()
    if key in _NORMALIZED:
        return key
    return _BY_NATIVE.get(key, key)


def native_for(event: str) -> NativeEvent | None:
    """The native hook point installed for paxm ``event`` (``None`` if the plugin has none)."""
    return next((e for e in NATIVE_EVENTS if e.event == event), None)
