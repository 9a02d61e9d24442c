"""The paxm-memory Codex plugin: the shipped marketplace and the per-config generated copy.

The shipped ``marketplace/`` has a static ``hooks.json`` running
``sh "$PLUGIN_ROOT/hooks/paxm-hook.sh" <Event>`` and a launcher whose interpreter, client and
config variables are empty (it falls back to ``paxm`` on PATH).  ``paxm setup --integration
codex-plugin`` generates a copy with them filled in and ``.mcp.json`` pointing at this
environment's ``paxm``.  Codex copies an installed plugin into its plugin cache; the absolute
paths inside keep working from there.
"""

from __future__ import annotations

import json
from pathlib import Path

from paxm_core.integration import (
    GENERATED_MARKER,
    generate_marketplace_dir,
    hook_launcher_values,
    remove_generated_dir,
)

__all__ = [
    "GENERATED_MARKER",
    "MARKETPLACE_DIR",
    "MARKETPLACE_NAME",
    "PLUGIN_ID",
    "PLUGIN_NAME",
    "REPOSITORY_PLUGIN_ID",
    "generate_marketplace",
    "generated_dir",
    "remove_generated",
]

MARKETPLACE_DIR = Path(__file__).parent / "marketplace"
MARKETPLACE_NAME = "paxm"
PLUGIN_NAME = "paxm-memory"
#: how Codex names the installed plugin (``[plugins."<id>"]``, hook trust keys ``<id>:hooks/...``)
PLUGIN_ID = f"{PLUGIN_NAME}@{MARKETPLACE_NAME}"
#: the plugin of the paxm repository's own marketplace (``codex plugin add paxm@paxm-plugins``):
#: when it is installed it owns the hooks, and setup trusts it instead of installing the generated copy
REPOSITORY_PLUGIN_ID = "paxm@paxm-plugins"
_PLUGIN = Path("plugins", PLUGIN_NAME)


def generated_dir(config_dir: Path) -> Path:
    """Where setup generates the marketplace for the paxm config in ``config_dir``."""
    return config_dir / "integrations" / "codex-plugin"


def generate_marketplace(
    dest: Path, *, python: str, client: str, config_path: Path, queue_path: str = "", paxm_exe: str = ""
) -> Path:
    """(Re)generate the marketplace at ``dest`` with absolute paths; returns the plugin dir."""
    files = {}
    if paxm_exe:
        server = {"command": paxm_exe, "args": ["--config", str(config_path), "mcp", "serve", "--agent", "codex"]}
        files[_PLUGIN / ".mcp.json"] = json.dumps({"mcpServers": {"paxm": server}}, indent=2) + "\n"
    launchers = {_PLUGIN / "hooks" / "paxm-hook.sh": hook_launcher_values(python, client, config_path, queue_path)}
    generate_marketplace_dir(MARKETPLACE_DIR, dest, launchers, files, "codex-plugin")
    return dest.absolute() / _PLUGIN


def remove_generated(config_dir: Path) -> bool:
    """Delete the generated marketplace (only if paxm's marker is in it); True if removed."""
    return remove_generated_dir(generated_dir(config_dir))
