"""Kiro: a paxm-owned custom agent ``~/.kiro/agents/paxm.json`` with the hooks, MCP in ``~/.kiro/settings/mcp.json``.

Upstream's agent: ``{"name": "paxm", "description": <marker>, "prompt": ..., "includeMcpJson":
true, "hooks": {"agentSpawn": [{"command", "timeout_ms": 60000}], "userPromptSubmit": [...],
"stop": [...]}}``, used with ``kiro-cli chat --agent paxm``.  The hook prints plain text (Kiro adds
a hook's stdout to the agent's context).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paxm_core.integration import EVENT_SESSION_START, EVENT_TURN_END, EVENT_USER_INPUT
from paxm_integration_ide.base import Binding, IdeIntegration, env_path, home
from paxm_integration_ide.entries import paxm_commands
from paxm_integration_ide.native import NativeFile, OwnedJsonFile
from paxm_integration_ide.shapes import mcp_edit

__all__ = ["AGENT_DESCRIPTION", "KiroIntegration"]

#: the description upstream writes; its presence marks the agent file as paxm's
AGENT_DESCRIPTION = "Kiro agent with paxm active recall and passive memory hooks."
AGENT_PROMPT = "Use the paxm MCP tools when durable memory would help the task."
#: Kiro's hook timeout is in milliseconds (upstream's value)
HOOK_TIMEOUT_MS = 60_000


class KiroIntegration(IdeIntegration):
    """Kiro (CLI ``kiro-cli``): paxm's hooks live in paxm's own agent, so the user's agents are untouched."""

    name = "kiro"
    aliases: tuple[str, ...] = ("kiro-cli",)
    display_name = "Kiro"
    label = "Kiro"
    setup_priority = 86
    executables = ("kiro-cli", "kiro")
    bindings = (
        Binding(EVENT_SESSION_START, "agentSpawn"),
        Binding(EVENT_USER_INPUT, "userPromptSubmit"),
        Binding(EVENT_TURN_END, "stop"),
    )

    def agent_path(self) -> Path:
        """``$PAXM_KIRO_AGENT`` > ``~/.kiro/agents/paxm.json``."""
        return env_path("PAXM_KIRO_AGENT", home() / ".kiro" / "agents" / "paxm.json")

    def mcp_path(self) -> Path:
        """``$PAXM_KIRO_MCP`` > ``~/.kiro/settings/mcp.json``."""
        return env_path("PAXM_KIRO_MCP", home() / ".kiro" / "settings" / "mcp.json")

    def config_dirs(self) -> list[Path]:
        return [home() / ".kiro"]

    def agent_document(self, config: Any) -> dict[str, Any]:
        """The whole agent file for ``config``."""
        hooks = {
            native: [{"command": c, "timeout_ms": HOOK_TIMEOUT_MS}]
            for native, c in self.wanted_commands(config).items()
        }
        return {
            "name": "paxm",
            "description": AGENT_DESCRIPTION,
            "prompt": AGENT_PROMPT,
            "includeMcpJson": True,
            "hooks": hooks,
        }

    def native_files(self, config: Any) -> list[NativeFile]:
        is_ours = self.is_ours(config)
        agent = OwnedJsonFile(
            path=self.agent_path(),
            what="Kiro agent",
            build=lambda: self.agent_document(config),
            is_ours=lambda text: AGENT_DESCRIPTION in text,
            commands=lambda data: paxm_commands(data.get("hooks"), is_ours),
        )
        return [agent, mcp_edit(self.mcp_path(), "Kiro MCP config", ("mcpServers",), config.path, self.name)]
