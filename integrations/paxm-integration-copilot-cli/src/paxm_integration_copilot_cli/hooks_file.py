"""paxm's own Copilot CLI hook file (``$COPILOT_HOME/hooks/paxm.json``): read, merge, write, remove.

Copilot CLI loads every ``*.json`` in its hooks directory: ``{"version": 1, "hooks": {event:
[{"type": "command", "bash": ..., "timeoutSec": ...}]}}``.  paxm keeps its handlers in a file
of its own so the user's hook files are never rewritten.  Should the user have put handlers of
their own into ``paxm.json`` too, they are kept: a handler is paxm's only when its ``bash``
runs paxm's hook client with ``--target <target>`` for this paxm config file.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from paxm_core.integration import IntegrationError, is_paxm_hook
from paxm_core.json_settings import read_json_object, write_json_object

__all__ = [
    "FILE_NAME",
    "HOOKS_VERSION",
    "is_empty",
    "is_paxm_command",
    "merge_handlers",
    "read_hooks_file",
    "write_hooks_file",
]

FILE_NAME = "paxm.json"
HOOKS_VERSION = 1
IsOurs = Callable[[str], bool]


def is_paxm_command(command: str, config_path: str | os.PathLike[str], target: str) -> bool:
    """Whether ``command`` runs paxm's hook client for ``target`` and the config file ``config_path``."""
    return is_paxm_hook(command, config_path, target)


def _ours(handler: Any, is_ours: IsOurs) -> bool:
    return isinstance(handler, dict) and isinstance(handler.get("bash"), str) and is_ours(handler["bash"])


def _hooks(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    hooks = data.get("hooks")
    if hooks is None:
        return {}
    if not isinstance(hooks, dict):
        raise IntegrationError(f'{where}: "hooks" must be a JSON object; paxm changed nothing')
    for event, handlers in hooks.items():
        if not isinstance(handlers, list):
            raise IntegrationError(f"{where}: hooks.{event} must be a JSON array; paxm changed nothing")
    return hooks


def merge_handlers(
    data: Mapping[str, Any], wanted: Mapping[str, dict[str, Any]], is_ours: IsOurs, *, where: str = "hooks file"
) -> dict[str, Any]:
    """``data`` with exactly the paxm handlers in ``wanted`` (event -> handler); input unchanged.

    An identical paxm handler already in place stays where it is; stale ones are removed
    (events they leave empty are dropped); missing ones are appended.
    """
    result = copy.deepcopy(dict(data))
    hooks = _hooks(result, where)
    for event in [*hooks, *(e for e in wanted if e not in hooks)]:
        want = wanted.get(event)
        kept = False
        handlers: list[Any] = []
        for handler in hooks.get(event, []):
            if not _ours(handler, is_ours):
                handlers.append(handler)
            elif want is not None and not kept and handler == want:
                handlers.append(handler)
                kept = True
        if want is not None and not kept:
            handlers.append(copy.deepcopy(want))
        if handlers:
            hooks[event] = handlers
        else:
            hooks.pop(event, None)
    if hooks:
        result["hooks"] = hooks
        if "version" not in result:  # first, where Copilot's documentation puts it
            result = {"version": HOOKS_VERSION, **result}
    else:
        result.pop("hooks", None)
    return result


def is_empty(data: Mapping[str, Any]) -> bool:
    """Nothing left but the ``version`` key: the file can go."""
    return not any(key != "version" for key in data)


def read_hooks_file(path: Path) -> tuple[dict[str, Any], bool]:
    """The parsed file and whether it exists.

    :raises IntegrationError: the file is unreadable or not a JSON object (never rewritten then).
    """
    value, original = read_json_object(path, "Copilot CLI hooks file")
    _hooks(value, str(path))
    return value, original is not None


def write_hooks_file(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as 2-space JSON, 0600, atomically (the file is paxm's own: no backup)."""
    write_json_object(path, data)
