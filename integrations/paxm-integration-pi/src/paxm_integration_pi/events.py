"""Pi's extension events and the paxm events they map to."""

from __future__ import annotations

from paxm_core.generated_file import NativeEvent
from paxm_core.integration import EVENT_SESSION_START, EVENT_TURN_END, EVENT_USER_INPUT

__all__ = ["NATIVE_EVENTS", "NativeEvent", "normalized_event"]


#: ``message_end`` and ``tool_execution_*`` only fill the extension's buffer; the buffered run
#: goes to paxm at ``agent_end`` (and, for a run that never ended, at ``session_shutdown``), so
#: tool calls and results reach paxm as part of the turn rather than as separate hooks.
NATIVE_EVENTS: tuple[NativeEvent, ...] = (
    NativeEvent("session_start", EVENT_SESSION_START),
    NativeEvent("before_agent_start", EVENT_USER_INPUT),
    NativeEvent("agent_end", EVENT_TURN_END),
)

_BY_NATIVE = {e.native: e.event for e in NATIVE_EVENTS} | {"session_shutdown": EVENT_TURN_END}
_NORMALIZED = {e.event for e in NATIVE_EVENTS}


def normalized_event(name: str) -> str:
    """The paxm event for a Pi event name (``before_agent_start`` -> ``user_input``); paxm names pass through."""
    key = name.strip()
    if key in _NORMALIZED:
        return key
    return _BY_NATIVE.get(key, key)
