"""OpenCode's plugin hook points and the paxm events they map to."""

from __future__ import annotations

from paxm_core.generated_file import NativeEvent
from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
)

__all__ = ["NATIVE_EVENTS", "NativeEvent"]


#: OpenCode has no session-start hook: the plugin runs ``session_start`` before the first
#: ``chat.message`` of each session, so its native name is the paxm name.
NATIVE_EVENTS: tuple[NativeEvent, ...] = (
    NativeEvent(EVENT_SESSION_START, EVENT_SESSION_START),
    NativeEvent("chat.message", EVENT_USER_INPUT),
    NativeEvent("tool.execute.after", EVENT_TOOL_USE),
    NativeEvent("session.idle", EVENT_TURN_END),
)
