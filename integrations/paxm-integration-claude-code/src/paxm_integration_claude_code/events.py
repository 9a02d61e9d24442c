"""Claude Code's native hook events and the paxm events they map to."""

from __future__ import annotations

from dataclasses import dataclass

from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_FAILURE,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
)

__all__ = ["HOOK_TIMEOUT", "NATIVE_EVENTS", "NativeEvent", "native_for", "normalized_event"]

#: seconds Claude Code waits for one paxm hook.  The hook client answers within its own 5 s
#: ceiling (it exits 0 even when the daemon hangs), so this only has to cover interpreter
#: start-up on a loaded machine on top of that; upstream's 60 s would let a wedged machine stall
#: every prompt for a minute.
HOOK_TIMEOUT = 10


@dataclass(frozen=True)
class NativeEvent:
    """One Claude Code hook event paxm installs."""

    native: str
    event: str
    matcher: str = ""


#: Installation order (also the order the events appear in settings.json and hooks.json).
NATIVE_EVENTS: tuple[NativeEvent, ...] = (
    NativeEvent("SessionStart", EVENT_SESSION_START, "startup|resume|clear|compact"),
    NativeEvent("UserPromptSubmit", EVENT_USER_INPUT),
    NativeEvent("PostToolUse", EVENT_TOOL_USE),
    NativeEvent("PostToolUseFailure", EVENT_TOOL_FAILURE),
    NativeEvent("Stop", EVENT_TURN_END),
)

_BY_NATIVE = {e.native.lower(): e.event for e in NATIVE_EVENTS}
_NORMALIZED = {e.event for e in NATIVE_EVENTS}


def normalized_event(name: str) -> str:
    """The paxm event for a native name (``UserPromptSubmit`` -> ``user_input``).

    Normalized names pass through, so ``--event user_input`` works too; anything else is kept
    as a custom (write-only) event name.
    """
    key = name.strip()
    if key in _NORMALIZED:
        return key
    return _BY_NATIVE.get(key.lower(), key)


def native_for(event: str) -> NativeEvent | None:
    """The native event installed for paxm ``event`` (``None`` if paxm installs none)."""
    return next((e for e in NATIVE_EVENTS if e.event == event), None)
