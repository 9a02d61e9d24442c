"""The generated Cline plugin file: render, write, recognise and remove it.

One dependency-free ES module (``plugin_template.js``) with paxm's settings embedded as a JSON
literal: the exact hook-client argv for each event and the per-hook timeout.
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
    "MARKER",
    "PLUGIN_FILE_NAME",
    "SPAWN_TIMEOUT_MS",
    "embedded_settings",
    "is_paxm_plugin",
    "render_plugin",
    "write_plugin",
]

#: the file paxm writes into Cline's ``plugins/`` directory
PLUGIN_FILE_NAME = "paxm.js"
#: first-lines marker that says a file is paxm's generated plugin (uninstall removes only those)
MARKER = "// paxm-cline-plugin v1"
#: how long one Cline hook of the plugin waits for paxm, all paxm hooks it runs together.  Cline
#: fails the whole run when a plugin hook takes more than 3 s, so paxm answers or gives up
#: (fail-open: nothing injected) well inside that.
SPAWN_TIMEOUT_MS = 2_000

_START = "/*PAXM_SETTINGS*/"
_END = "/*END_PAXM_SETTINGS*/"


def _template() -> str:
    return resources.files(__package__).joinpath("plugin_template.js").read_text(encoding="utf-8")


def render_plugin(
    commands: Mapping[str, Sequence[str]], *, target: str = "cline", timeout_ms: int = SPAWN_TIMEOUT_MS
) -> str:
    """The plugin source with ``commands`` (paxm event -> hook-client argv) embedded."""
    settings = {
        "version": 1,
        "target": target,
        "timeoutMs": int(timeout_ms),
        "commands": {event: list(argv) for event, argv in commands.items()},
    }
    # JSON is a JS expression; escaping "<" keeps any path literal inert
    literal = json.dumps(settings, ensure_ascii=True, indent=2).replace("<", "\\u003c")
    head, rest = _template().split(_START, 1)
    _, tail = rest.split(_END, 1)
    return f"{head}{_START} {literal} {_END}{tail}"


def embedded_settings(source: str) -> dict[str, Any] | None:
    """The settings JSON embedded in a generated plugin (``None`` if it is not one)."""
    if MARKER not in source[:2048] or _START not in source or _END not in source:
        return None
    try:
        value = json.loads(source.split(_START, 1)[1].split(_END, 1)[0])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def is_paxm_plugin(path: Path) -> bool:
    """Whether ``path`` is a plugin paxm generated (so paxm may replace or delete it)."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:2048]
    except OSError:
        return False
    return MARKER in head


def _mkdir_private(path: Path) -> None:
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)  # whatever the umask


def write_plugin(path: Path, source: str) -> bool:
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
