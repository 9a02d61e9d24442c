"""paxm's MCP server entry in an IDE's MCP config: ``"paxm": {"command", "args"}``, as upstream writes it.

The command is the ``paxm`` console script of the environment paxm runs from (next to its
interpreter), so the IDE starts the same paxm, with the same Python, as the hooks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from paxm_core.api.errors import IntegrationError
from paxm_core.integration import paxm_executable

__all__ = ["SERVER_NAME", "check_slot", "is_paxm_server", "paxm_executable", "server_entry", "set_server"]

SERVER_NAME = "paxm"


def server_entry(config_path: str | os.PathLike[str], agent: str) -> dict[str, Any]:
    """``{"command": <paxm>, "args": ["--config", <config>, "mcp", "serve", "--agent", agent]}``."""
    exe = paxm_executable()
    if not exe:
        raise IntegrationError(
            "cannot register paxm's MCP server: no `paxm` executable next to this Python or on PATH; "
            "reinstall paxm (pip install paxm) and run setup again"
        )
    config = str(Path(config_path).expanduser().absolute())
    return {"command": exe, "args": ["--config", config, "mcp", "serve", "--agent", agent]}


def _config_of(args: list[Any]) -> str:
    for i, word in enumerate(args[:-1]):
        if word == "--config" and isinstance(args[i + 1], str):
            return str(args[i + 1])
    return ""


def is_paxm_server(entry: Any, config_path: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``entry`` launches ``paxm ... mcp serve`` (for ``config_path`` when given)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("args"), list):
        return False
    args = list(entry["args"])
    serves = any(args[i : i + 2] == ["mcp", "serve"] for i in range(len(args)))
    if not serves or not isinstance(entry.get("command"), str):
        return False
    if config_path is None:
        return True
    config = _config_of(args)
    return bool(config) and Path(config).expanduser().absolute() == Path(config_path).expanduser().absolute()


def check_slot(servers: dict[str, Any], where: str) -> None:
    """Refuse a ``paxm`` server entry that is the user's own (not a paxm ``mcp serve`` launch)."""
    existing = servers.get(SERVER_NAME)
    if existing is not None and not is_paxm_server(existing):
        raise IntegrationError(
            f'{where} already has an MCP server named "{SERVER_NAME}" that does not run `paxm mcp serve`; '
            "rename it, then run setup again (paxm changed nothing)"
        )


def set_server(servers: dict[str, Any], entry: dict[str, Any] | None, config_path: str | os.PathLike[str]) -> None:
    """Put ``entry`` in the ``paxm`` slot, or (``None``) take paxm's own entry for ``config_path`` out."""
    if entry is not None:
        servers[SERVER_NAME] = entry
    elif is_paxm_server(servers.get(SERVER_NAME), config_path):
        del servers[SERVER_NAME]
