"""The generated Cline plugin: ``plugin_template.js`` with paxm's settings embedded (the hook-client
argv per event and the per-hook timeout), in :class:`paxm_core.generated_file.GeneratedFile`'s format."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paxm_core.generated_file import GeneratedFile

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
#: how long one Cline hook of the plugin waits for paxm, all paxm hooks it runs together: Cline
#: fails the whole run when a plugin hook takes more than 3 s
SPAWN_TIMEOUT_MS = 2_000


@cache
def _plugin() -> GeneratedFile:
    # imported here: the hook path (decode, output) never renders or reads the plugin
    from paxm_core.generated_file import GeneratedFile, template_text

    return GeneratedFile(template_text(__package__, "plugin_template.js"), marker=MARKER)


def render_plugin(
    commands: Mapping[str, Sequence[str]], *, target: str = "cline", timeout_ms: int = SPAWN_TIMEOUT_MS
) -> str:
    """The plugin source with ``commands`` (paxm event -> hook-client argv) embedded."""
    argv = {event: list(args) for event, args in commands.items()}
    return _plugin().render({"version": 1, "target": target, "timeoutMs": int(timeout_ms), "commands": argv})


def embedded_settings(source: str) -> dict[str, Any] | None:
    """The settings JSON embedded in a generated plugin (``None`` if it is not one)."""
    return _plugin().embedded_settings(source)


def is_paxm_plugin(path: Path) -> bool:
    """Whether ``path`` is a plugin paxm generated (so paxm may replace or delete it)."""
    return _plugin().is_paxm(path)


def write_plugin(path: Path, source: str) -> bool:
    """Write ``source`` to ``path`` (``False`` when it was already current); a current plugin is left
    as it is, mode included, and a new one replaces a link, never writes through it."""
    return _plugin().write(path, source)
