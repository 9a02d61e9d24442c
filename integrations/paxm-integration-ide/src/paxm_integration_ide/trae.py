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
from paxm_integration_ide.native import NativeFile
from paxm_integration_ide.shapes import mcp_edit

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
        hooks = self.hooks_edit(
            config,
            self.hooks_path(),
            f"{self.display_name} hooks",
            ("hooks",),
            lambda command, binding: claude_group(command, binding.matcher),
            grouped=True,
            version="last",
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
