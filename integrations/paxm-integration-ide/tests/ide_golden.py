"""Golden-file helpers: placeholders for the paths that differ per machine, tree snapshots of a fake HOME."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paxm_core.config.defaults import default_config
from paxm_core.config.model import Config
from paxm_core.integration import hook_command_line
from paxm_integration_ide.base import IdeIntegration
from paxm_integration_ide.mcp import paxm_executable

__all__ = ["config_for", "fill", "placeholders", "snapshot", "unfill"]


def config_for(tmp_path: Path, agent: str) -> Config:
    """upstream's default config (under ``tmp_path/paxm``) with ``agent`` enabled."""
    config = default_config(tmp_path / "paxm" / "config.yaml")
    config.agents[agent].enabled = True
    return config


def placeholders(config: Config, integration: IdeIntegration) -> dict[str, str]:
    """Placeholder -> this machine's value: each hook command, paxm's executable, the config paths."""
    values = {
        f"{{HOOK {b.event}}}": hook_command_line(config.path, integration.name, b.event, mode=integration.mode)
        for b in integration.bindings
    }
    values["{PAXM}"] = paxm_executable()
    values["{CONFIGDIR}"] = str(Path(config.path).parent)
    values["{CONFIG}"] = str(config.path)
    return values


def _map(value: Any, change: Any) -> Any:
    if isinstance(value, dict):
        return {k: _map(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_map(v, change) for v in value]
    return change(value) if isinstance(value, str) else value


def fill(text: str, values: dict[str, str]) -> Any:
    """Parse golden JSON and put this machine's values in place of the placeholders."""

    def change(s: str) -> str:
        if s in values:
            return values[s]
        for key in ("{CONFIGDIR}", "{CONFIG}"):
            s = s.replace(key, values[key])
        return s

    return _map(json.loads(text), change)


def unfill(value: Any, values: dict[str, str]) -> Any:
    """The reverse of :func:`fill` (to write a golden file from real output)."""
    reverse = {v: k for k, v in values.items()}

    def change(s: str) -> str:
        if s in reverse:
            return reverse[s]
        return s.replace(values["{CONFIGDIR}"], "{CONFIGDIR}")

    return _map(value, change)


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> text), paxm's backups included."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}
