"""Which hook entries are paxm's, and merging paxm's one entry per event into a list of the user's.

Two list shapes occur in the IDEs' files: flat handlers (Cursor: ``[{"command", "timeout"}]``)
and Claude-style groups (TRAE, ZCode: ``[{"matcher"?, "hooks": [{"command", ...}]}]``).  Only
entries whose command is paxm's are ever touched; everything else keeps its content and order.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from paxm_core.integration import is_paxm_hook
from paxm_core.settings_hooks import merge_entries

__all__ = ["IsOurs", "is_paxm_command", "merge_flat", "merge_groups", "paxm_commands"]

IsOurs = Callable[[str], bool]

#: upstream (Go) paxm's hook shims live at ``<configdir>/hooks/<target>-<event>``; a file it
#: registered is cleaned up by this paxm too, so moving from upstream leaves no stale hook
_UPSTREAM_EVENTS = ("session_start", "user_input", "turn_end", "tool_use", "tool_failure")


def is_paxm_command(command: str, config_path: str | os.PathLike[str], target: str) -> bool:
    """Whether ``command`` is paxm's hook for ``target`` and the paxm config file ``config_path``."""
    config = Path(config_path).expanduser().absolute()
    shims = [str(config.parent / "hooks" / f"{target}-{event}") for event in _UPSTREAM_EVENTS]
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    stripped = [w for w in words if w]
    if any(word in shims or word.removesuffix(".ps1") in shims for word in stripped):
        return True
    return bool(words) and is_paxm_hook(words, config, target)


def _command_of(entry: Any) -> str | None:
    if isinstance(entry, dict) and isinstance(entry.get("command"), str):
        return str(entry["command"])
    return None


def _ours(entry: Any, is_ours: IsOurs) -> bool:
    command = _command_of(entry)
    return command is not None and is_ours(command)


def merge_flat(entries: list[Any], want: dict[str, Any] | None, is_ours: IsOurs) -> list[Any]:
    """``entries`` with exactly one paxm entry equal to ``want`` (none when ``want`` is ``None``)."""
    return merge_entries(entries, want, lambda entry: _ours(entry, is_ours))


def merge_groups(groups: list[Any], want: dict[str, Any] | None, is_ours: IsOurs) -> list[Any]:
    """Claude-style groups with exactly one paxm group equal to ``want`` (none when ``None``); a
    user's group that also holds a paxm handler keeps its other handlers."""

    def ours(group: Any) -> bool:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        return isinstance(handlers, list) and any(_ours(h, is_ours) for h in handlers)

    def strip(group: Any) -> Any:
        remaining = [h for h in group["hooks"] if not _ours(h, is_ours)]
        return {**group, "hooks": remaining} if remaining else None

    return merge_entries(groups, want, ours, strip)


def paxm_commands(value: Any, is_ours: IsOurs) -> list[str]:
    """Every paxm command anywhere inside ``value`` (for doctor's "do these paths exist?")."""
    found: list[str] = []
    if isinstance(value, dict):
        command = _command_of(value)
        if command is not None and is_ours(command):
            found.append(command)
        for child in value.values():
            if isinstance(child, (dict, list)):
                found.extend(paxm_commands(child, is_ours))
    elif isinstance(value, list):
        for child in value:
            found.extend(paxm_commands(child, is_ours))
    return found
