"""Claude Code ``settings.json``: locating it, merging paxm's hooks in and taking them out.

The merge functions are pure (settings dict in, new dict out) so golden tests can pin them;
:func:`read_settings` / :func:`write_settings` do the careful file work (refuse to touch a file
that is not valid JSON, one-time ``settings.json.paxm.bak``, atomic 0600 writes through a
symlinked dotfile).

A handler is paxm's when its command runs paxm's hook client for *this* config file with
``--target claude`` (any interpreter or install location, so an install from a moved or
upgraded virtualenv is still recognised and replaced), or is one of upstream's shell shims
``<configdir>/hooks/claude-<event>``.  Nothing else is ever touched.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paxm_core.integration import IntegrationError, client_path, write_atomic
from paxm_integration_claude_code.events import HOOK_TIMEOUT, NATIVE_EVENTS

__all__ = [
    "BACKUP_SUFFIX",
    "WantedHook",
    "is_paxm_command",
    "merge_hooks",
    "paxm_matcher",
    "read_settings",
    "remove_hooks",
    "settings_path",
    "write_settings",
]

BACKUP_SUFFIX = ".paxm.bak"
#: how paxm's hook client path ends (today's and, should it move, the one older installs used)
_CLIENT_TAILS = frozenset({("paxm_core", "hooks", "client.py"), client_path().parts[-3:]})

IsOurs = Callable[[str], bool]


def settings_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$PAXM_CLAUDE_SETTINGS`` > ``$CLAUDE_CONFIG_DIR/settings.json`` > ``~/.claude/settings.json``."""
    env = os.environ if environ is None else environ
    explicit = env.get("PAXM_CLAUDE_SETTINGS", "").strip()
    if explicit:
        return Path(explicit).expanduser().absolute()
    config_dir = env.get("CLAUDE_CONFIG_DIR", "").strip()
    base = Path(config_dir).expanduser() if config_dir else Path.home() / ".claude"
    return (base / "settings.json").absolute()


@dataclass(frozen=True)
class WantedHook:
    """The paxm handler one native event should have."""

    command: str
    matcher: str = ""
    timeout: int = HOOK_TIMEOUT

    def group(self) -> dict[str, Any]:
        """A fresh settings group holding just this handler."""
        group: dict[str, Any] = {}
        if self.matcher:
            group["matcher"] = self.matcher
        group["hooks"] = [self.handler()]
        return group

    def handler(self) -> dict[str, Any]:
        """The handler object (``type``, ``command``, ``timeout``)."""
        return {"type": "command", "command": self.command, "timeout": self.timeout}


def _flag_value(words: list[str], flag: str) -> str | None:
    for i, word in enumerate(words):
        if word == flag and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(flag + "="):
            return word[len(flag) + 1 :]
    return None


def is_paxm_command(command: str, config_path: str | os.PathLike[str]) -> bool:
    """Whether ``command`` is a paxm Claude hook for the config file ``config_path``."""
    config = Path(config_path).expanduser().absolute()
    legacy_marker = str(config.parent / "hooks" / "claude-")
    if legacy_marker in command:
        return True
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    runs_client = any(Path(w).parts[-3:] in _CLIENT_TAILS for w in words if w.endswith(".py"))
    if not runs_client or _flag_value(words, "--target") != "claude":
        return False
    configured = _flag_value(words, "--config")
    return configured is not None and Path(configured).expanduser().absolute() == config


def paxm_matcher(config_path: str | os.PathLike[str]) -> IsOurs:
    """``is_paxm_command`` bound to one config file."""
    return lambda command: is_paxm_command(command, config_path)


def _is_ours(handler: Any, is_ours: IsOurs) -> bool:
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return isinstance(command, str) and is_ours(command)


def _hooks_section(settings: Mapping[str, Any], where: str) -> dict[str, Any]:
    hooks = settings.get("hooks")
    if hooks is None:
        return {}
    if not isinstance(hooks, dict):
        raise IntegrationError(f'{where}: "hooks" must be a JSON object; paxm changed nothing')
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise IntegrationError(f"{where}: hooks.{event} must be a JSON array; paxm changed nothing")
    return hooks


def _strip_event(groups: list[Any], is_ours: IsOurs, keep: str = "") -> tuple[list[Any], bool, bool]:
    """Remove paxm handlers from one event's groups.

    A handler whose command equals ``keep`` survives once (the first one), so a reinstall
    leaves an up-to-date handler where it is.  Groups emptied by the removal are dropped;
    groups that were already empty are the user's and stay.  Returns (groups, changed, kept).
    """
    out: list[Any] = []
    changed = kept = False
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list) or not any(_is_ours(h, is_ours) for h in handlers):
            out.append(group)
            continue
        remaining = []
        for handler in handlers:
            if not _is_ours(handler, is_ours):
                remaining.append(handler)
            elif keep and not kept and handler.get("command") == keep:
                remaining.append(handler)
                kept = True
            else:
                changed = True
        if remaining:
            out.append({**group, "hooks": remaining} if remaining != handlers else group)
        else:
            changed = True
    return out, changed, kept


def merge_hooks(
    settings: Mapping[str, Any], wanted: Mapping[str, WantedHook], is_ours: IsOurs, *, where: str = "settings"
) -> dict[str, Any]:
    """``settings`` with exactly the paxm handlers in ``wanted`` (native event -> handler).

    Unrelated keys, hooks, groups and matchers keep their content and order.  An existing
    paxm handler with the wanted command stays in place (its timeout is refreshed); stale
    paxm handlers (old interpreter, other events) are removed; missing ones are appended as
    new groups.  The input is not modified.
    """
    result = copy.deepcopy(dict(settings))
    hooks = _hooks_section(result, where)
    created = "hooks" not in result or result.get("hooks") is None
    events = list(hooks)
    for native in NATIVE_EVENTS:
        if native.native in wanted and native.native not in hooks:
            events.append(native.native)
    changed = False
    for event in events:
        want = wanted.get(event)
        groups, removed, kept = _strip_event(hooks.get(event, []), is_ours, want.command if want else "")
        changed |= removed
        if want is not None and kept:
            for group in groups:
                for handler in group.get("hooks", []) if isinstance(group, dict) else []:
                    if _is_ours(handler, is_ours) and handler.get("timeout") != want.timeout:
                        handler["timeout"] = want.timeout
                        changed = True
        elif want is not None:
            groups.append(want.group())
            changed = True
        if groups:
            hooks[event] = groups
        elif event in hooks and removed:
            del hooks[event]
    if not changed:
        return copy.deepcopy(dict(settings))
    if hooks:
        result["hooks"] = hooks
    elif not created:
        result.pop("hooks", None)
    return result


def remove_hooks(settings: Mapping[str, Any], is_ours: IsOurs, *, where: str = "settings") -> dict[str, Any]:
    """``settings`` without paxm's handlers; emptied groups, events and ``hooks`` are dropped."""
    return merge_hooks(settings, {}, is_ours, where=where)


def read_settings(path: Path) -> tuple[dict[str, Any], bytes | None]:
    """The parsed settings and the original bytes (``None`` when the file does not exist).

    :raises IntegrationError: the file is not a JSON object (paxm never rewrites a file it
        cannot parse: that would lose the user's settings).
    """
    try:
        original = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        raise IntegrationError(f"cannot read Claude Code settings {path}: {exc.strerror or exc}") from exc
    text = original.decode("utf-8-sig", errors="replace").strip()  # editors on Windows add a BOM
    if not text:
        return {}, original
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        detail = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise IntegrationError(
            f"Claude Code settings {path} is not valid JSON{detail}; fix or move it, paxm changed nothing"
        ) from None
    if not isinstance(value, dict):
        raise IntegrationError(f"Claude Code settings {path} must hold a JSON object; paxm changed nothing")
    _hooks_section(value, str(path))
    return value, original


def write_settings(path: Path, settings: Mapping[str, Any], original: bytes | None) -> None:
    """Write ``settings`` as 2-space JSON, mode 0600, atomically.

    The first time paxm changes an existing non-empty file it keeps the original as
    ``settings.json.paxm.bak`` (never overwritten later).  A symlinked settings file is
    updated at its target, so dotfile managers keep working.
    """
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if original is not None and original.strip():
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        if not backup.exists():
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(original)
    data = (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    write_atomic(target, data)
