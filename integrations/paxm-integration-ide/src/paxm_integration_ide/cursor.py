"""Cursor: ``~/.cursor/hooks.json`` hooks and ``~/.cursor/mcp.json``, ``{"continue": true, ...}`` output.

Upstream's shapes: ``{"version": 1, "hooks": {"sessionStart": [{"command", "timeout": 60}],
"beforeSubmitPrompt": [...], "afterAgentResponse": [...]}}`` and ``mcpServers.paxm``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    HookEvent,
    HookResult,
    dumps_compact,
    parse_payload,
)
from paxm_integration_ide.base import Binding, IdeIntegration, env_path, home
from paxm_integration_ide.native import NativeFile
from paxm_integration_ide.shapes import mcp_edit

__all__ = ["CursorIntegration"]

#: Cursor's hook timeout is in seconds (upstream's value)
HOOK_TIMEOUT = 60


class CursorIntegration(IdeIntegration):
    """Cursor.  It cannot inject context on prompt submission, so its agent has no passive recall."""

    name = "cursor"
    display_name = "Cursor"
    label = "Cursor"
    setup_priority = 40
    mode = "cursor"
    executables = ("cursor",)
    bindings = (
        Binding(EVENT_SESSION_START, "sessionStart"),
        Binding(EVENT_USER_INPUT, "beforeSubmitPrompt"),
        Binding(EVENT_TURN_END, "afterAgentResponse"),
    )

    def hooks_path(self) -> Path:
        """``$PAXM_CURSOR_HOOKS`` > ``~/.cursor/hooks.json``."""
        return env_path("PAXM_CURSOR_HOOKS", home() / ".cursor" / "hooks.json")

    def mcp_path(self) -> Path:
        """``$PAXM_CURSOR_MCP`` > ``~/.cursor/mcp.json``."""
        return env_path("PAXM_CURSOR_MCP", home() / ".cursor" / "mcp.json")

    def config_dirs(self) -> list[Path]:
        return [home() / ".cursor"]

    def native_files(self, config: Any) -> list[NativeFile]:
        hooks = self.hooks_edit(
            config,
            self.hooks_path(),
            "Cursor hooks",
            ("hooks",),
            lambda command, _: {"command": command, "timeout": HOOK_TIMEOUT},
            grouped=False,
            version="first",
        )
        return [hooks, mcp_edit(self.mcp_path(), "Cursor MCP config", ("mcpServers",), config.path, self.name)]

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Cursor's payload (``conversation_id``, ``workspace_roots``); ``afterAgentResponse`` ``text`` is the reply."""
        event = super().decode(native_event, raw)
        if event.event == EVENT_TURN_END and not event.assistant:
            text = parse_payload(raw).get("text")
            event.assistant = text.strip() if isinstance(text, str) else ""
        return event

    def hook_output(self, result: HookResult, mode: str) -> str:
        """``{"continue": true, "additional_context": ...}``; no context on prompts (Cursor ignores it there)."""
        if mode != self.mode:
            return super().hook_output(result, mode)
        if result.ignored:
            return ""
        shown = result.context if result.event != EVENT_USER_INPUT else ""
        return dumps_compact({"continue": True, **({"additional_context": shown} if shown else {})})
