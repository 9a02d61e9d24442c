"""ZCode: hooks and the MCP server in one file, ``~/.zcode/cli/config.json``; ``{"additionalContext"}`` output.

Upstream's shapes: ``hooks.events.<SessionStart|UserPromptSubmit|Stop>`` groups ``{"hooks":
[{"async": false, "command", "type": "command"}], "matcher"?}`` (SessionStart matches
``startup|resume``) and ``mcp.servers.paxm``.  paxm never turns ZCode's hooks on: with
``hooks.enabled: false`` setup refuses and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paxm_core.api.errors import IntegrationError
from paxm_core.integration import EVENT_SESSION_START, EVENT_TURN_END, EVENT_USER_INPUT, HookResult, dumps_compact
from paxm_integration_ide.base import Binding, IdeIntegration, env_path, home
from paxm_integration_ide.native import NativeFile
from paxm_integration_ide.shapes import combine, mcp_edit, nested

__all__ = ["ZCodeIntegration", "zcode_group"]


def zcode_group(command: str, matcher: str) -> dict[str, Any]:
    """One ZCode hook group running ``command`` synchronously."""
    group: dict[str, Any] = {"hooks": [{"async": False, "command": command, "type": "command"}]}
    if matcher:
        group["matcher"] = matcher
    return group


class ZCodeIntegration(IdeIntegration):
    """ZCode."""

    name = "zcode"
    display_name = "ZCode"
    label = "ZCode"
    setup_priority = 80
    mode = "zcode"
    executables = ("zcode",)
    bindings = (
        Binding(EVENT_SESSION_START, "SessionStart", "startup|resume"),
        Binding(EVENT_USER_INPUT, "UserPromptSubmit"),
        Binding(EVENT_TURN_END, "Stop"),
    )

    def config_path(self) -> Path:
        """``$PAXM_ZCODE_CONFIG`` > ``~/.zcode/cli/config.json``."""
        return env_path("PAXM_ZCODE_CONFIG", home() / ".zcode" / "cli" / "config.json")

    def config_dirs(self) -> list[Path]:
        return [home() / ".zcode"]

    def native_files(self, config: Any) -> list[NativeFile]:
        path = self.config_path()
        where = str(path)

        def check(data: dict[str, Any]) -> None:
            enabled = nested(data, ("hooks",), where).get("enabled")
            if enabled is not None and not isinstance(enabled, bool):
                raise IntegrationError(f"{where}: hooks.enabled must be true or false; paxm changed nothing")
            if enabled is False:
                raise IntegrationError(
                    f"ZCode hooks are turned off in {where} (hooks.enabled is false); paxm never turns them on: "
                    "enable hooks in ZCode, then run setup again"
                )

        hooks = self.hooks_edit(
            config,
            path,
            "ZCode config",
            ("hooks", "events"),
            lambda command, binding: zcode_group(command, binding.matcher),
            grouped=True,
            check=check,
        )
        return [combine(hooks, mcp_edit(path, "ZCode config", ("mcp", "servers"), config.path, self.name))]

    def hook_output(self, result: HookResult, mode: str) -> str:
        """``{"additionalContext": ...}``, or ``{}`` when there is nothing to add."""
        if mode != self.mode:
            return super().hook_output(result, mode)
        if result.ignored:
            return ""
        return dumps_compact({"additionalContext": result.context} if result.context else {})
