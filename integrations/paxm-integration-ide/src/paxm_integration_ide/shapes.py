"""Shape checks and edits shared by the IDE files: nested objects, arrays of hooks, the MCP slot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from paxm_core.api.errors import IntegrationError
from paxm_integration_ide.entries import IsOurs, merge_flat, merge_groups
from paxm_integration_ide.mcp import check_slot, server_entry, set_server
from paxm_integration_ide.native import JsonEdit

__all__ = ["combine", "event_arrays", "mcp_edit", "merge_events", "nested", "set_nested"]


def nested(data: Any, keys: tuple[str, ...], where: str) -> dict[str, Any]:
    """The object at ``keys`` inside ``data`` (``{}`` when absent or null)."""
    current = data
    for depth, key in enumerate(keys):
        value = current.get(key) if isinstance(current, dict) else None
        if value is None:
            return {}
        if not isinstance(value, dict):
            dotted = ".".join(keys[: depth + 1])
            raise IntegrationError(f'{where}: "{dotted}" must be a JSON object; paxm changed nothing')
        current = value
    return current if isinstance(current, dict) else {}


def set_nested(data: dict[str, Any], keys: tuple[str, ...], value: dict[str, Any]) -> None:
    """Put ``value`` at ``keys`` (creating the objects on the way, replacing a null)."""
    current = data
    for key in keys[:-1]:
        if not isinstance(current.get(key), dict):
            current[key] = {}
        current = current[key]
    current[keys[-1]] = value


def event_arrays(events: dict[str, Any], where: str, prefix: str) -> None:
    """Every event in ``events`` must hold a JSON array (null counts as empty)."""
    for name, value in events.items():
        if value is not None and not isinstance(value, list):
            raise IntegrationError(f"{where}: {prefix}.{name} must be a JSON array; paxm changed nothing")


def merge_events(
    events: dict[str, Any],
    wanted: dict[str, dict[str, Any]],
    is_ours: IsOurs,
    *,
    grouped: bool,
) -> dict[str, Any]:
    """``events`` (native event -> array) with exactly paxm's ``wanted`` entry per event, and none elsewhere."""
    merge: Callable[[list[Any], dict[str, Any] | None, IsOurs], list[Any]] = merge_groups if grouped else merge_flat
    out: dict[str, Any] = {}
    for name in [*events, *(n for n in wanted if n not in events)]:
        current, want = events.get(name), wanted.get(name)
        if current is None and want is None:
            out[name] = current  # the user's null stays null
        else:
            out[name] = merge(list(current or []), want, is_ours)
    return out


def mcp_edit(path: Path, what: str, keys: tuple[str, ...], config_path: Path, agent: str) -> JsonEdit:
    """The JSON edit that registers ``paxm mcp serve --agent <agent>`` at ``keys`` + ``paxm`` in ``path``."""
    where = str(path)

    def validate(data: dict[str, Any]) -> None:
        check_slot(nested(data, keys, where), where)

    def update(data: dict[str, Any], install: bool) -> dict[str, Any]:
        servers = dict(nested(data, keys, where))
        set_server(servers, server_entry(config_path, agent) if install else None, config_path)
        if install or nested(data, keys[:-1], where).get(keys[-1]) is not None:
            set_nested(data, keys, servers)
        return data

    def ready() -> None:
        server_entry(config_path, agent)  # raises when there is no paxm executable to register

    return JsonEdit(path=path, what=what, update=update, validate=validate, ready=ready)


def combine(first: JsonEdit, *more: JsonEdit) -> JsonEdit:
    """One edit of one file doing ``first`` then ``more`` (ZCode keeps hooks and MCP in one file)."""
    edits = (first, *more)

    def validate(data: dict[str, Any]) -> None:
        for edit in edits:
            edit.validate(data)

    def update(data: dict[str, Any], install: bool) -> dict[str, Any]:
        for edit in edits:
            data = edit.update(data, install)
        return data

    def commands(data: dict[str, Any]) -> list[str]:
        return [c for edit in edits for c in edit.commands(data)]

    def ready() -> None:
        for edit in edits:
            edit.ready()

    scalars = {k: v for edit in edits for k, v in edit.scalars.items()}
    return JsonEdit(first.path, first.what, update, validate, scalars, commands, ready)
