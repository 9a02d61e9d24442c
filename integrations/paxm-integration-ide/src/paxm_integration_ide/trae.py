"""TRAE and TRAE CN: Claude-shaped hooks in ``~/.trae[-cn]/hooks.json``, MCP in the desktop app's ``User/mcp.json``.

Upstream's shapes: ``{"hooks": {"SessionStart": [{"matcher": "startup|resume|clear|compact",
"hooks": [{"type": "command", "command", "timeout": 60}]}], "UserPromptSubmit": [...],
"Stop": [...]}, "version": 1}``; ``mcpServers.paxm``.  The hook prints plain text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paxm_core.integration import EVENT_SESSION_START, EVENT_TURN_END, EVENT_USER_INPUT
from paxm_integration_ide.base import Binding, IdeIntegration, desktop_app_dir, env_path, home
from paxm_integration_ide.entries import paxm_commands
from paxm_integration_ide.native import JsonEdit, NativeFile
from paxm_integration_ide.shapes import event_arrays, mcp_edit, merge_events, nested

__all__ = ["TraeCNIntegration", "TraeIntegration", "claude_group"]

#: TRAE's hook timeout is in seconds (upstream's value)
HOOK_TIMEOUT = 60


def claude_group(command: str, matcher: str) -> dict[str, Any]:
    """One Claude-style hook group running ``command``."""
    group: dict[str, Any] = {"matcher": matcher} if matcher else {}
    group["hooks"] = [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]
    return group


class TraeIntegration(IdeIntegration):
    """TRAE (international).  Upstream writes its session-start group with Claude Code's matcher."""

    name = "trae"
    display_name = "TRAE"
    label = "TRAE"
    setup_priority = 82
    executables = ("trae",)
    #: the directory under ``~`` holding ``hooks.json``, the desktop app's name, the env prefix
    home_dir = ".trae"
    app = "Trae"
    env = "PAXM_TRAE"
    bindings = (
        Binding(EVENT_SESSION_START, "SessionStart", "startup|resume|clear|compact"),
        Binding(EVENT_USER_INPUT, "UserPromptSubmit"),
        Binding(EVENT_TURN_END, "Stop"),
    )

    def hooks_path(self) -> Path:
        """``$PAXM_TRAE_HOOKS`` > ``~/.trae/hooks.json``."""
        return env_path(f"{self.env}_HOOKS", home() / self.home_dir / "hooks.json")

    def mcp_path(self) -> Path:
        """``$PAXM_TRAE_MCP`` > the desktop app's ``User/mcp.json`` (macOS, Windows, XDG locations)."""
        return env_path(f"{self.env}_MCP", desktop_app_dir(self.app) / "User" / "mcp.json")

    def config_dirs(self) -> list[Path]:
        return [home() / self.home_dir, desktop_app_dir(self.app)]

    def native_files(self, config: Any) -> list[NativeFile]:
        path = self.hooks_path()
        where = str(path)
        is_ours = self.is_ours(config)
        matchers = {b.native: b.matcher for b in self.bindings}

        def validate(data: dict[str, Any]) -> None:
            event_arrays(nested(data, ("hooks",), where), where, "hooks")

        def update(data: dict[str, Any], install: bool) -> dict[str, Any]:
            wanted = self.wanted_commands(config) if install else {}
            groups = {native: claude_group(c, matchers[native]) for native, c in wanted.items()}
            if install or data.get("hooks") is not None:
                data["hooks"] = merge_events(nested(data, ("hooks",), where), groups, is_ours, grouped=True)
            if install and "version" not in data:
                data["version"] = 1
            return data

        hooks = JsonEdit(
            path=path,
            what=f"{self.display_name} hooks",
            update=update,
            validate=validate,
            scalars={"version": 1},
            commands=lambda data: paxm_commands(data.get("hooks"), is_ours),
        )
        mcp = mcp_edit(self.mcp_path(), f"{self.display_name} MCP config", ("mcpServers",), config.path, self.name)
        return [hooks, mcp]


class TraeCNIntegration(TraeIntegration):
    """TRAE CN (the China edition): the same files under ``~/.trae-cn`` and the ``Trae CN`` app."""

    name = "trae-cn"
    aliases: tuple[str, ...] = ("trae cn", "trae_cn", "traecn")
    display_name = "TRAE CN"
    label = "TRAE CN"
    setup_priority = 84
    executables = ("trae-cn",)
    home_dir = ".trae-cn"
    app = "Trae CN"
    env = "PAXM_TRAE_CN"
