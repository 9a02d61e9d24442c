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
from paxm_integration_ide.entries import paxm_commands
from paxm_integration_ide.native import JsonEdit, NativeFile
from paxm_integration_ide.shapes import combine, event_arrays, mcp_edit, merge_events, nested, set_nested

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
        is_ours = self.is_ours(config)
        matchers = {b.native: b.matcher for b in self.bindings}

        def validate(data: dict[str, Any]) -> None:
            hooks = nested(data, ("hooks",), where)
            enabled = hooks.get("enabled")
            if enabled is not None and not isinstance(enabled, bool):
                raise IntegrationError(f"{where}: hooks.enabled must be true or false; paxm changed nothing")
            if enabled is False:
                raise IntegrationError(
                    f"ZCode hooks are turned off in {where} (hooks.enabled is false); paxm never turns them on: "
                    "enable hooks in ZCode, then run setup again"
                )
            event_arrays(nested(data, ("hooks", "events"), where), where, "hooks.events")

        def update(data: dict[str, Any], install: bool) -> dict[str, Any]:
            wanted = self.wanted_commands(config) if install else {}
            groups = {native: zcode_group(c, matchers[native]) for native, c in wanted.items()}
            if install or nested(data, ("hooks",), where).get("events") is not None:
                events = nested(data, ("hooks", "events"), where)
                set_nested(data, ("hooks", "events"), merge_events(events, groups, is_ours, grouped=True))
            return data

        hooks = JsonEdit(
            path=path,
            what="ZCode config",
            update=update,
            validate=validate,
            commands=lambda data: paxm_commands(nested(data, ("hooks",), where).get("events"), is_ours),
        )
        return [combine(hooks, mcp_edit(path, "ZCode config", ("mcp", "servers"), config.path, self.name))]

    def hook_output(self, result: HookResult, mode: str) -> str:
        """``{"additionalContext": ...}``, or ``{}`` when there is nothing to add."""
        if mode != self.mode:
            return super().hook_output(result, mode)
        if result.ignored:
            return ""
        return dumps_compact({"additionalContext": result.context} if result.context else {})
