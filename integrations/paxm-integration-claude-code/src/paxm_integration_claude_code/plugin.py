"""The paxm-claude Claude Code plugin: the shipped marketplace and the per-config generated copy.

The shipped ``marketplace/`` has a static ``hooks.json`` calling
``sh "${CLAUDE_PLUGIN_ROOT}/hooks/paxm-hook.sh" <Event>`` and two launchers whose interpreter,
client and config variables are empty (they fall back to ``paxm`` on PATH).  ``paxm setup
--integration claude-plugin`` generates a copy with them filled in, so the per-prompt path is
the same ``<venv python> -I -S client.py`` as the settings.json hooks, with no lookups.
"""

from __future__ import annotations

from pathlib import Path

from paxm_core.integration import (
    generate_marketplace_dir,
    hook_launcher_values,
    remove_generated_dir,
)

__all__ = [
    "MARKETPLACE_DIR",
    "MARKETPLACE_NAME",
    "PLUGIN_NAME",
    "generate_marketplace",
    "generated_dir",
    "remove_generated",
]

MARKETPLACE_DIR = Path(__file__).parent / "marketplace"
MARKETPLACE_NAME = "paxm"
PLUGIN_NAME = "paxm-claude"
_HOOK_LAUNCHER = Path("plugins", PLUGIN_NAME, "hooks", "paxm-hook.sh")
_MCP_LAUNCHER = Path("plugins", PLUGIN_NAME, "scripts", "paxm-mcp.sh")


def generated_dir(config_dir: Path) -> Path:
    """Where setup generates the plugin marketplace for the config in ``config_dir``."""
    return config_dir / "integrations" / "claude-plugin"


def generate_marketplace(
    dest: Path, *, python: str, client: str, config_path: Path, queue_path: str = "", paxm_exe: str = ""
) -> Path:
    """(Re)generate the marketplace at ``dest`` with absolute paths; returns the plugin dir."""
    launchers = {
        _HOOK_LAUNCHER: hook_launcher_values(python, client, config_path, queue_path),
        _MCP_LAUNCHER: {"PAXM_EXE": paxm_exe, "PAXM_CONFIG_FILE": str(config_path)},
    }
    generate_marketplace_dir(MARKETPLACE_DIR, dest, launchers, {}, "claude-plugin")
    return dest.absolute() / "plugins" / PLUGIN_NAME


def remove_generated(config_dir: Path) -> bool:
    """Delete the generated marketplace (only if paxm's marker is in it); True if removed."""
    return remove_generated_dir(generated_dir(config_dir))
