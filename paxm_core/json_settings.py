"""A harness's JSON settings file, handled the careful way: read, merge paxm's hook groups, write.

A file paxm cannot parse is never rewritten; writes are atomic, 0600, at a symlink's target, and
keep the user's original as ``<name>.paxm.bak`` the first time.  Only handlers ``is_ours``
claims are touched; everything else keeps its content and order.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TypeGuard

from paxm_core.api.errors import IntegrationError
from paxm_core.api.json import JSONObject, JSONValue
from paxm_core.atomic import write_atomic

__all__ = [
    "BACKUP_SUFFIX",
    "hooks_section",
    "make_private_dirs",
    "merge_hook_groups",
    "read_json_object",
    "write_json_object",
    "write_private",
]

BACKUP_SUFFIX = ".paxm.bak"
IsOurs = Callable[[str], bool]


def read_json_object(path: Path, what: str, *, hint: str = "fix or move it") -> tuple[JSONObject, bytes | None]:
    """The parsed object and the original bytes (``None`` when the file does not exist)."""
    try:
        original = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    except IsADirectoryError:
        raise IntegrationError(f"{what} {path} is a directory; paxm changed nothing") from None
    except OSError as exc:
        raise IntegrationError(f"cannot read {what} {path}: {exc.strerror or exc}; paxm changed nothing") from exc
    text = original.decode("utf-8-sig", errors="replace").strip()
    if not text:
        return {}, original
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        detail = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise IntegrationError(f"{what} {path} is not valid JSON{detail}; {hint}, paxm changed nothing") from None
    if not isinstance(value, dict):
        raise IntegrationError(f"{what} {path} must hold a JSON object; paxm changed nothing")
    return value, original


def make_private_dirs(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing parents 0700; existing ones are the user's and keep their mode."""
    missing = []
    probe = directory
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    created = []
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            if not path.is_dir():
                raise
            continue  # made by another process meanwhile: not ours to chmod
        _chmod_new_dir(path)
        created.append(path)
    return created


def _chmod_new_dir(path: Path) -> None:
    """Set 0700 on the directory just made, through a descriptor: the umask may have narrowed it,
    and a link swapped in since ``mkdir`` must not pass the mode on to whatever it points at."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        from paxm_core.private_files import UnsafePathError

        raise UnsafePathError(
            f"{path} changed while paxm created it ({exc.strerror}); paxm changed nothing there"
        ) from None
    try:
        if os.fstat(fd).st_mode & 0o777 != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def write_private(path: Path, text: str, original: bytes | str | None = None) -> list[Path]:
    """Write ``text`` to ``path`` atomically, 0600, at the target of a symlink; returns the
    directories it created (0700, outermost first)."""
    target = Path(os.path.realpath(path))
    made = make_private_dirs(target.parent)
    if original is not None and original.strip():
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        if not backup.exists():
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(original.encode() if isinstance(original, str) else original)
    write_atomic(target, text)
    return made


def write_json_object(path: Path, data: Mapping[str, JSONValue], original: bytes | None = None) -> list[Path]:
    """Write ``data`` as 2-space JSON (UTF-8 kept) with :func:`write_private`; returns the
    directories it created."""
    return write_private(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", original)


def hooks_section(settings: Mapping[str, JSONValue], where: str, *, switches: Collection[str] = ()) -> JSONObject:
    """``settings["hooks"]`` checked: an object whose events (every key but ``switches``) are arrays."""
    hooks = settings.get("hooks")
    if hooks is None:
        return {}
    if not isinstance(hooks, dict):
        raise IntegrationError(f'{where}: "hooks" must be a JSON object; paxm changed nothing')
    for event, groups in hooks.items():
        if event not in switches and not isinstance(groups, list):
            raise IntegrationError(f"{where}: hooks.{event} must be a JSON array; paxm changed nothing")
    return hooks


def _ours(handler: object, is_ours: IsOurs) -> TypeGuard[JSONObject]:
    """Whether ``handler`` is a handler object whose ``command`` is paxm's."""
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return isinstance(command, str) and is_ours(command)


def _first_handler(group: Mapping[str, JSONValue] | None) -> Mapping[str, JSONValue] | None:
    """The one handler of a group paxm installs (``{"hooks": [handler]}``)."""
    handlers = group.get("hooks") if group is not None else None
    first = handlers[0] if isinstance(handlers, list) and handlers else None
    return first if isinstance(first, Mapping) else None


def merge_hook_groups(
    settings: Mapping[str, JSONValue],
    wanted: Mapping[str, JSONObject],
    is_ours: IsOurs,
    *,
    where: str = "settings",
    switches: Collection[str] = (),
    refresh: Collection[str] = (),
) -> JSONObject:
    """``settings`` with exactly the paxm groups in ``wanted`` (event -> group); input unchanged."""
    result = copy.deepcopy(dict(settings))
    hooks = hooks_section(result, where, switches=switches)
    changed = False
    for event in [*(e for e in hooks if e not in switches), *(e for e in wanted if e not in hooks)]:
        want = wanted.get(event)
        current = hooks.get(event)
        groups, removed, kept = _strip_event(
            current if isinstance(current, list) else [], _first_handler(want), is_ours, refresh
        )
        changed |= removed or kept == "refreshed"
        if want is not None and not kept:
            groups.append(copy.deepcopy(want))
            changed = True
        if groups:
            hooks[event] = groups
        elif event in hooks and removed:
            del hooks[event]
    if not changed:
        return copy.deepcopy(dict(settings))
    if hooks:
        result["hooks"] = hooks
    else:
        result.pop("hooks", None)
    return result


def _strip_event(
    groups: Sequence[JSONValue], want: Mapping[str, JSONValue] | None, is_ours: IsOurs, refresh: Collection[str]
) -> tuple[list[JSONValue], bool, str]:
    """One event's groups without paxm's handlers but the one matching ``want``."""
    out: list[JSONValue] = []
    removed = False
    kept = ""
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if (
            not isinstance(group, dict)
            or not isinstance(handlers, list)
            or not any(_ours(h, is_ours) for h in handlers)
        ):
            out.append(group)
            continue
        remaining: list[JSONValue] = []
        for handler in handlers:
            if not _ours(handler, is_ours):
                remaining.append(handler)
            elif want is not None and not kept and handler == want:
                remaining.append(handler)
                kept = "kept"
            elif want is not None and not kept and refresh and handler["command"] == want["command"]:
                stale = {key: want[key] for key in refresh if handler.get(key) != want[key]}
                remaining.append({**handler, **stale})
                kept = "refreshed" if stale else "kept"
            else:
                removed = True
        if remaining:
            out.append({**group, "hooks": remaining})
        else:
            removed = True
    return out, removed, kept
