"""The generated OpenCode plugin file: its format, and the helpers tests and tools use.

The plugin is one dependency-free ES module (``plugin_template.js``) with paxm's settings
embedded as a JSON literal: the exact hook-client argv for each event and the timeout.  Writing,
recognising and removing it is :class:`paxm_core.generated_file.GeneratedFile`'s job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from paxm_core.api.json import JSONObject
from paxm_core.generated_file import DEFAULT_SPAWN_TIMEOUT_MS, GeneratedFile

__all__ = [
    "LEGACY_FILE_NAME",
    "MARKER",
    "PLUGIN_FILE_NAME",
    "SPAWN_TIMEOUT_MS",
    "embedded_settings",
    "is_paxm_plugin",
    "is_upstream_plugin",
    "plugin_file",
    "remove_plugin",
    "render_plugin",
    "write_plugin",
]

#: the file paxm writes into ``<config dir>/plugins/`` (JavaScript, so OpenCode needs no
#: TypeScript types and paxm needs no ``@opencode-ai/plugin`` package)
PLUGIN_FILE_NAME = "paxm.js"
#: upstream (the Go paxm) wrote ``paxm.ts``; setup replaces it so nothing fires twice
LEGACY_FILE_NAME = "paxm.ts"
#: first-lines marker that says a file is paxm's generated plugin (uninstall removes only those)
MARKER = "// paxm-opencode-plugin v1"
#: how long the plugin waits for one hook client run before killing it
SPAWN_TIMEOUT_MS = DEFAULT_SPAWN_TIMEOUT_MS
#: what the Go paxm's generated plugin contains (its payload schema and shim variable)
_UPSTREAM_MARKERS = ("paxm.opencode.user_input.v1", "paxmUserInputHookCommand")


@cache
def plugin_file() -> GeneratedFile:
    """The plugin's format: template, marker and upstream's markers."""
    template = resources.files(__package__).joinpath("plugin_template.js").read_text(encoding="utf-8")
    return GeneratedFile(template=template, marker=MARKER, upstream_markers=_UPSTREAM_MARKERS)


def header_replacements(target: str) -> dict[str, str]:
    """The header names the agent whose uninstall removes the file (identical for ``opencode``)."""
    return {"--agent opencode": f"--agent {target}"}


def render_plugin(
    commands: Mapping[str, Sequence[str]], *, target: str = "opencode", timeout_ms: int = SPAWN_TIMEOUT_MS
) -> str:
    """The plugin source with ``commands`` (paxm event -> hook-client argv) embedded."""
    settings: JSONObject = {
        "version": 1,
        "target": target,
        "timeoutMs": int(timeout_ms),
        "commands": {event: list(argv) for event, argv in commands.items()},
    }
    return plugin_file().render(settings, replace=header_replacements(target))


def embedded_settings(source: str) -> dict[str, Any] | None:
    """The settings JSON embedded in a generated plugin (``None`` if it is not one)."""
    return plugin_file().embedded_settings(source)


def is_paxm_plugin(path: Path) -> bool:
    """Whether ``path`` is a plugin paxm generated (so paxm may replace or delete it)."""
    return plugin_file().is_paxm(path)


def is_upstream_plugin(path: Path) -> bool:
    """Whether ``path`` is the plugin upstream (the Go paxm) generated."""
    return plugin_file().is_upstream(path)


def write_plugin(path: Path, source: str) -> bool:
    """Write ``source`` to ``path`` atomically, mode 0600; ``False`` when it was already current."""
    return GeneratedFile.write(path, source)


def remove_plugin(path: Path) -> bool:
    """Delete ``path`` if it is paxm's generated plugin; ``True`` if something was removed."""
    return plugin_file().remove(path, upstream=False)
