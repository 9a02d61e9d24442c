"""Pi's extension events and the paxm events they map to."""

from __future__ import annotations

from paxm_core.generated_file import NativeEvent
from paxm_core.integration import EVENT_SESSION_START, EVENT_TURN_END, EVENT_USER_INPUT

__all__ = ["NATIVE_EVENTS", "NativeEvent"]


#: ``message_end`` and ``tool_execution_*`` only fill the extension's buffer; the buffered run
#: goes to paxm at ``agent_end`` (and, for a run that never ended, at ``session_shutdown``), so
#: tool calls and results reach paxm as part of the turn rather than as separate hooks.
NATIVE_EVENTS: tuple[NativeEvent, ...] = (
    NativeEvent("session_start", EVENT_SESSION_START),
    NativeEvent("before_agent_start", EVENT_USER_INPUT),
    NativeEvent("agent_end", EVENT_TURN_END),
)
