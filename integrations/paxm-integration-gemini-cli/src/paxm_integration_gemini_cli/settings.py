"""Gemini CLI's ``settings.json``: read it carefully, merge paxm's handlers into ``hooks``, take them out.

``hooks`` is ``{Event: [{"matcher"?: ..., "hooks": [{"type": "command", "command": ...}]}]}``;
Gemini also accepts the switches ``enabled`` / ``disabled`` / ``notifications`` inside ``hooks``
(older releases' place for ``hooksConfig``), which are not events and are left alone.  A
handler is paxm's when its command runs paxm's hook client with ``--target <target>`` for this
paxm config file; nothing else is ever changed, and everything else keeps its content and order.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from paxm_core.errors import IntegrationError
from paxm_core.integration import is_paxm_hook

__all__ = ["BACKUP_SUFFIX", "CONFIG_FIELDS", "is_paxm_command", "merge_hooks", "read_settings", "write_settings"]

BACKUP_SUFFIX = ".paxm.bak"
#: keys of ``hooks`` that are switches, not events (Gemini skips them when it loads hooks)
CONFIG_FIELDS = frozenset({"enabled", "disabled", "notifications"})
IsOurs = Callable[[str], bool]


def is_paxm_command(command: str, config_path: str | os.PathLike[str], target: str) -> bool:
    """Whether ``command`` runs paxm's hook client for ``target`` and the config file ``config_path``."""
    return is_paxm_hook(command, config_path, target)


def _ours(handler: Any, is_ours: IsOurs) -> bool:
    return isinstance(handler, dict) and isinstance(handler.get("command"), str) and is_ours(handler["command"])


def _hooks(settings: Mapping[str, Any], where: str) -> dict[str, Any]:
    hooks = settings.get("hooks")
    if hooks is None:
        return {}
    if not isinstance(hooks, dict):
        raise IntegrationError(f'{where}: "hooks" must be a JSON object; paxm changed nothing')
    for event, groups in hooks.items():
        if event not in CONFIG_FIELDS and not isinstance(groups, list):
            raise IntegrationError(f"{where}: hooks.{event} must be a JSON array; paxm changed nothing")
    return hooks


def merge_hooks(
    settings: Mapping[str, Any],
    wanted: Mapping[str, dict[str, Any]],
    is_ours: IsOurs,
    *,
    where: str = "settings",
) -> dict[str, Any]:
    """``settings`` with exactly the paxm groups in ``wanted`` (native event -> group); input unchanged.

    An identical paxm handler already in place stays where it is; stale paxm handlers are
    removed (groups they leave empty are dropped); missing ones are appended as new groups.
    """
    result = copy.deepcopy(dict(settings))
    hooks = _hooks(result, where)
    changed = False
    for event in [*(e for e in hooks if e not in CONFIG_FIELDS), *(e for e in wanted if e not in hooks)]:
        want = wanted.get(event)
        want_handler = want["hooks"][0] if want else None
        kept = False
        groups: list[Any] = []
        for group in hooks.get(event, []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(_ours(h, is_ours) for h in handlers):
                groups.append(group)
                continue
            remaining = []
            for handler in handlers:
                if not _ours(handler, is_ours):
                    remaining.append(handler)
                elif want_handler is not None and not kept and handler == want_handler:
                    remaining.append(handler)
                    kept = True
                else:
                    changed = True
            if remaining:
                groups.append({**group, "hooks": remaining})
            else:
                changed = True
        if want is not None and not kept:
            groups.append(copy.deepcopy(want))
            changed = True
        if groups:
            hooks[event] = groups
        elif event in hooks:
            del hooks[event]
    if not changed:
        return copy.deepcopy(dict(settings))
    if hooks:
        result["hooks"] = hooks
    else:
        result.pop("hooks", None)
    return result


def read_settings(path: Path, what: str) -> tuple[dict[str, Any], bytes | None]:
    """The parsed settings and the original bytes (``None`` when the file does not exist).

    :raises IntegrationError: the file is unreadable or not a JSON object (never rewritten then).
    """
    try:
        original = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        raise IntegrationError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    text = original.decode("utf-8-sig", errors="replace").strip()
    if not text:
        return {}, original
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        detail = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise IntegrationError(
            f"{what} {path} is not valid JSON{detail} (paxm cannot keep comments when it rewrites the file;"
            " remove them or add paxm's hooks by hand); paxm changed nothing"
        ) from None
    if not isinstance(value, dict):
        raise IntegrationError(f"{what} {path} must hold a JSON object; paxm changed nothing")
    _hooks(value, str(path))
    return value, original


def _mkdir_private(path: Path) -> None:
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)


def write_settings(path: Path, settings: Mapping[str, Any], original: bytes | None) -> None:
    """Write ``settings`` as 2-space JSON, 0600, atomically (at a symlink's target).

    The first time paxm changes an existing non-empty file the original is kept beside it as
    ``<name>.paxm.bak`` (never overwritten later).
    """
    target = Path(os.path.realpath(path))
    _mkdir_private(target.parent)
    if original is not None and original.strip():
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        if not backup.exists():
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(original)
    data = (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=".settings.", suffix=".paxm.tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
