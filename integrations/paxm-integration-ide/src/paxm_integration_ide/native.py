"""The IDE files paxm edits, and what install / uninstall / doctor do to each.

:class:`JsonEdit` is a JSON file paxm shares with the user (hooks.json, mcp.json): install
merges paxm's entries in, uninstall takes exactly them out.  To give back the file the user
had, install records (in ``<paxm config dir>/integrations/ide/<agent>.json``) which keys it had
to create and whether it created the file; uninstall removes those keys again when they are
empty (or still hold paxm's value) and deletes a file it created once nothing is left in it.

:class:`OwnedJsonFile` is a file paxm owns whole (Kiro's ``agents/paxm.json``): written on
install, deleted on uninstall, and never written over when someone else's file is there.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paxm_core.api.errors import IntegrationError
from paxm_core.integration import write_atomic
from paxm_core.json_settings import make_private_dirs, read_json_object, write_json_object
from paxm_core.private_files import private_dir

__all__ = ["FileState", "JsonEdit", "NativeFile", "OwnedJsonFile", "added_paths", "dumps_file"]

KeyPath = tuple[str, ...]


def dumps_file(value: Any) -> str:
    """How paxm writes an IDE's JSON file: 2-space indent, UTF-8 kept, a final newline."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def write_object(
    path: Path, value: dict[str, Any], original: bytes | None, *, backup: bool = True, made: list[Path] | None = None
) -> bool:
    """Write ``value`` (0600, atomically, at a symlink's target, with the original kept as
    ``<name>.paxm.bak`` when ``backup``) unless nothing changed; ``made`` collects new directories."""
    if original is not None and original.decode("utf-8-sig", errors="replace").strip() == dumps_file(value).strip():
        return False
    created = write_json_object(path, value, original if backup else None)
    if made is not None:
        made.extend(created)
    return True


def added_paths(before: Any, after: Any, prefix: KeyPath = ()) -> list[KeyPath]:
    """Object keys present in ``after`` and absent (or null) in ``before``, recursing into objects both have."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    out: list[KeyPath] = []
    for key, value in after.items():
        if before.get(key) is None and value is not None:
            out.append((*prefix, key))
        else:
            out.extend(added_paths(before[key], value, (*prefix, key)))
    return out


class FileState:
    """What install created in each native file of one agent (a small private JSON file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        self.files: dict[str, Any] = data.get("files", {}) if isinstance(data, dict) else {}
        dirs = data.get("dirs", []) if isinstance(data, dict) else []
        #: directories paxm created for these files (removed on uninstall when empty)
        self.dirs: list[str] = [d for d in dirs if isinstance(d, str)]

    def get(self, native: Path) -> dict[str, Any] | None:
        entry = self.files.get(str(native))
        return entry if isinstance(entry, dict) else None

    def record(
        self, native: Path, *, created: bool, added: list[KeyPath], nulls: list[KeyPath], values: dict[str, Any]
    ) -> None:
        """Remember (a file's first install wins) what paxm added to ``native``."""
        entry = self.get(native)
        if entry is None:
            entry = {"created": created, "added": [], "null": [], "values": {}}
            self.files[str(native)] = entry
        known = {tuple(p) for p in entry["added"]}
        entry["added"] += [list(p) for p in added if p not in known]
        entry["null"] += [list(p) for p in nulls if p not in known]
        entry["values"].update({k: v for k, v in values.items() if k not in entry["values"]})
        self.save()

    def made_dirs(self, dirs: list[Path]) -> None:
        """Remember directories paxm created (removed on uninstall when empty)."""
        if dirs:
            self.dirs += [str(d) for d in dirs if str(d) not in self.dirs]
            self.save()

    def remove_dirs(self) -> None:
        """Remove the directories paxm created that are empty now, innermost first."""
        for directory in sorted(self.dirs, key=len, reverse=True):
            try:
                os.rmdir(directory)
            except OSError:
                pass  # not empty (the IDE or the user put something there) or already gone
        self.dirs = []
        self.save()

    def forget(self, native: Path) -> None:
        if self.files.pop(str(native), None) is not None:
            self.save()

    def save(self) -> None:
        if not self.files and not self.dirs:
            self.path.unlink(missing_ok=True)
            return
        private_dir(self.path.parent)
        write_atomic(self.path, json.dumps({"version": 1, "files": self.files, "dirs": self.dirs}, indent=2) + "\n")


def _get(data: Any, path: KeyPath) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _has(data: Any, path: KeyPath) -> bool:
    """Whether ``path`` exists in ``data`` (its value may be ``null``)."""
    parent = _get(data, path[:-1]) if len(path) > 1 else data
    return isinstance(parent, dict) and path[-1] in parent


def _drop_empty(value: Any) -> Any:
    """``value`` without the empty arrays and objects inside it (a key paxm created holds only paxm's)."""
    if isinstance(value, dict):
        kept = {k: _drop_empty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in ({}, [])}
    return value


def _prune(
    data: dict[str, Any], paths: list[KeyPath], values: dict[str, Any], nulls: list[KeyPath] | None = None
) -> None:
    """Remove each recorded key (deepest first) that is now empty or still paxm's scalar value."""
    for path in sorted(paths, key=len, reverse=True):
        parent = _get(data, path[:-1]) if len(path) > 1 else data
        if not isinstance(parent, dict) or path[-1] not in parent:
            continue
        value = parent[path[-1]] = _drop_empty(parent[path[-1]])
        scalar = "/".join(path)
        if value in ({}, []) or (scalar in values and value == values[scalar]):
            if path in (nulls or []):
                parent[path[-1]] = None
            else:
                del parent[path[-1]]


class NativeFile:
    """One IDE file paxm changes: the operations the integration runs on it."""

    path: Path
    what: str

    def preflight(self) -> None:
        """Raise :class:`IntegrationError` when install could not change the file safely."""
        raise NotImplementedError

    def install(self, state: FileState) -> bool:
        """Put paxm's entries in; returns whether the file changed."""
        raise NotImplementedError

    def uninstall(self, state: FileState) -> bool:
        """Take paxm's entries out; returns whether the file changed."""
        raise NotImplementedError

    def installed(self) -> tuple[bool, list[str]]:
        """Doctor: whether paxm's entries are in place as install would write them, and the hook commands."""
        raise NotImplementedError


@dataclass
class JsonEdit(NativeFile):
    """A JSON file shared with the user.

    ``update(data, install)`` returns the new data (``install=False`` takes paxm's entries out and
    leaves empty containers: pruning them is this class's job, so a container the user had
    stays); ``scalars`` are values paxm sets that uninstall removes again when unchanged;
    ``ready`` raises when install could not build paxm's entries (preflight only).
    """

    path: Path
    what: str
    update: Callable[[dict[str, Any], bool], dict[str, Any]]
    validate: Callable[[dict[str, Any]], None] = lambda data: None
    scalars: dict[str, Any] = field(default_factory=dict)
    commands: Callable[[dict[str, Any]], list[str]] = lambda data: []
    ready: Callable[[], None] = lambda: None

    def _read(self) -> tuple[dict[str, Any], bytes | None]:
        data, original = read_json_object(self.path, self.what)
        self.validate(data)
        return data, original

    def preflight(self) -> None:
        self._read()
        self.ready()

    def install(self, state: FileState) -> bool:
        data, original = self._read()
        updated = self.update(copy.deepcopy(data), True)
        # the file as the user's alone: without earlier paxm entries (an older paxm's, upstream's)
        # and the arrays and objects only they filled; what install adds beyond that is paxm's
        # (on the first install only: later, such a container may be one paxm itself filled)
        base = data
        if state.get(self.path) is None:
            base = self.update(copy.deepcopy(data), False)
            _prune(base, _emptied(data, base), {})
        added = added_paths(base, updated)
        values = {"/".join(p): _get(updated, p) for p in added if "/".join(p) in self.scalars}
        nulls = [p for p in added if _has(data, p) and _get(data, p) is None]
        state.record(self.path, created=original is None, added=added, nulls=nulls, values=values)
        if original is not None and updated == data:
            return False
        record = state.get(self.path) or {}
        made: list[Path] = []
        written = write_object(self.path, updated, original, backup=not record.get("created"), made=made)
        state.made_dirs(made)
        return written

    def uninstall(self, state: FileState) -> bool:
        data, original = self._read()
        if original is None:
            state.forget(self.path)
            return False
        updated = self.update(copy.deepcopy(data), False)
        record = state.get(self.path)
        if record is not None:
            paths = [tuple(p) for p in record.get("added", [])]
            nulls = [tuple(p) for p in record.get("null", [])]
            _prune(updated, paths, dict(record.get("values", {})), nulls)
        else:  # installed by upstream paxm or state lost: drop what paxm emptied (upstream's rule)
            _prune(updated, [p for p in _emptied(data, updated)], {})
        if record is not None and record.get("created") and not updated:
            self.path.unlink()
            state.forget(self.path)
            return True
        state.forget(self.path)
        if updated == data:
            return False
        return write_object(self.path, updated, original, backup=False)

    def installed(self) -> tuple[bool, list[str]]:
        data, original = self._read()
        if original is None:
            return False, []
        return self.update(copy.deepcopy(data), True) == data, self.commands(data)


def _emptied(before: Any, after: Any, prefix: KeyPath = ()) -> list[KeyPath]:
    """Keys whose non-empty array or object in ``before`` is empty in ``after``."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    out: list[KeyPath] = []
    for key, value in after.items():
        old = before.get(key)
        if value in ({}, []) and old not in ({}, [], None):
            out.append((*prefix, key))
        else:
            out.extend(_emptied(old, value, (*prefix, key)))
    return out


@dataclass
class OwnedJsonFile(NativeFile):
    """A JSON file paxm owns whole; ``marker`` (a string in it) says it is paxm's."""

    path: Path
    what: str
    build: Callable[[], dict[str, Any]]
    is_ours: Callable[[str], bool]
    commands: Callable[[dict[str, Any]], list[str]] = lambda data: []

    def _existing(self) -> str | None:
        try:
            return self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise IntegrationError(f"cannot read {self.what} {self.path}: {exc.strerror or exc}") from exc

    def preflight(self) -> None:
        text = self._existing()
        if text is not None and not self.is_ours(text):
            raise IntegrationError(
                f"{self.what} {self.path} already exists and is not paxm's; "
                "move or rename it, then run setup again (paxm changed nothing)"
            )

    def install(self, state: FileState) -> bool:
        self.preflight()
        data = dumps_file(self.build())
        if self._existing() == data:
            return False
        if state.get(self.path) is None:
            state.record(self.path, created=True, added=[], nulls=[], values={})
        state.made_dirs(make_private_dirs(Path(os.path.realpath(self.path)).parent))
        write_atomic(os.path.realpath(self.path), data)
        return True

    def uninstall(self, state: FileState) -> bool:
        text = self._existing()
        if text is None or not self.is_ours(text):
            state.forget(self.path)
            return False
        self.path.unlink()
        state.forget(self.path)
        return True

    def installed(self) -> tuple[bool, list[str]]:
        text = self._existing()
        if text is None:
            return False, []
        try:
            data = json.loads(text)
        except ValueError:
            return False, []
        return text == dumps_file(self.build()), self.commands(data) if isinstance(data, dict) else []
