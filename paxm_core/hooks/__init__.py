"""Passive memory: hook events in, context out, turns captured (see ``docs/hooks.md``).

Import-light on purpose: the daemon and CLI import the heavy parts themselves.
"""

from __future__ import annotations

from paxm_core.hooks.command import hook_command, hook_command_line
from paxm_core.hooks.events import (
    EVENT_SESSION_START,
    EVENT_TOOL_FAILURE,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    STANDARD_EVENTS,
    HookEvent,
    HookMessage,
    HookResult,
)
from paxm_core.hooks.insertion import InsertionPolicy, filter_insertion_hits
from paxm_core.hooks.integration import GenericIntegration, HookIntegration

__all__ = [
    "EVENT_SESSION_START",
    "EVENT_TOOL_FAILURE",
    "EVENT_TOOL_USE",
    "EVENT_TURN_END",
    "EVENT_USER_INPUT",
    "STANDARD_EVENTS",
    "GenericIntegration",
    "HookEvent",
    "HookIntegration",
    "HookMessage",
    "HookResult",
    "InsertionPolicy",
    "filter_insertion_hits",
    "hook_command",
    "hook_command_line",
]
