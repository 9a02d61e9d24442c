"""The generated Pi extension file: render, write, recognise and remove it.

The extension is one dependency-free module (``extension_template.ts``, TypeScript that is also
plain JavaScript) with paxm's settings embedded as a JSON literal: the exact hook-client argv
for each event and the timeout.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "EXTENSION_DIR_NAME",
    "EXTENSION_FILE_NAME",
    "MARKER",
    "SPAWN_TIMEOUT_MS",
    "embedded_settings",
    "is_paxm_extension",
    "is_upstream_extension",
    "remove_extension",
    "render_extension",
    "write_extension",
]

#: the directory paxm owns under ``<agent dir>/extensions/`` (upstream's name, so setup replaces
#: the Go paxm's extension in place and Pi never loads both)
EXTENSION_DIR_NAME = "paxm-hook"
#: Pi auto-discovers ``extensions/<name>/index.ts``
EXTENSION_FILE_NAME = "index.ts"
#: first-lines marker that says a file is paxm's generated extension (uninstall removes only those)
MARKER = "// paxm-pi-extension v1"
#: how long the extension waits for one hook client run before killing it.  The client answers
#: within its own 5 s ceiling even when the daemon or a provider hangs; the rest covers
#: interpreter start-up on a loaded machine.
SPAWN_TIMEOUT_MS = 10_000

_START = "/*PAXM_SETTINGS*/"
_END = "/*END_PAXM_SETTINGS*/"
#: what the Go paxm's generated extension contains (its shim variables and payload schema)
_UPSTREAM_MARKERS = ("paxmUserInputHookCommand", "paxm.pi.user_input.v1")


def _template() -> str:
    return resources.files(__package__).joinpath("extension_template.ts").read_text(encoding="utf-8")


def render_extension(
    commands: Mapping[str, Sequence[str]], *, target: str = "pi", timeout_ms: int = SPAWN_TIMEOUT_MS
) -> str:
    """The extension source with ``commands`` (paxm event -> hook-client argv) embedded."""
    settings = {
        "version": 1,
        "target": target,
        "timeoutMs": int(timeout_ms),
        "commands": {event: list(argv) for event, argv in commands.items()},
    }
    # JSON is a JS expression; escaping "<" keeps any path literal inert in the module
    literal = json.dumps(settings, ensure_ascii=True, indent=2).replace("<", "\\u003c")
    head, rest = _template().split(_START, 1)
    _, tail = rest.split(_END, 1)
    return f"{head}{_START} {literal} {_END}{tail}"


def embedded_settings(source: str) -> dict[str, Any] | None:
    """The settings JSON embedded in a generated extension (``None`` if it is not one)."""
    if MARKER not in source[:2048] or _START not in source or _END not in source:
        return None
    literal = source.split(_START, 1)[1].split(_END, 1)[0]
    try:
        value = json.loads(literal)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _head(path: Path, size: int) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:size]
    except OSError:
        return ""


def is_paxm_extension(path: Path) -> bool:
    """Whether ``path`` is an extension this paxm generated (so paxm may replace or delete it)."""
    return MARKER in _head(path, 2048)


def is_upstream_extension(path: Path) -> bool:
    """Whether ``path`` is the extension upstream (the Go paxm) generated."""
    text = _head(path, 262_144)
    return all(marker in text for marker in _UPSTREAM_MARKERS)


def _mkdir_private(path: Path) -> None:
    """Create ``path`` and missing parents 0700 (existing directories are left as they are)."""
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)  # whatever the umask


def write_extension(path: Path, source: str) -> bool:
    """Write ``source`` to ``path`` atomically, mode 0600; ``False`` when it was already current."""
    try:
        if path.read_text(encoding="utf-8") == source:
            os.chmod(path, 0o600)
            return False
    except OSError:
        pass
    _mkdir_private(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=".paxm-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(source)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def remove_extension(path: Path) -> bool:
    """Delete ``path`` if paxm (this one or upstream) generated it, then its directory if empty.

    Anything else a user put in ``extensions/paxm-hook/`` stays, and so does the directory then.
    """
    if not (is_paxm_extension(path) or is_upstream_extension(path)):
        return False
    path.unlink(missing_ok=True)
    try:
        path.parent.rmdir()
    except OSError:
        pass  # not empty (or already gone): leave it
    return True
