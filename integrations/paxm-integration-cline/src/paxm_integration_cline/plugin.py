"""The generated Cline plugin file: render, write, recognise and remove it.

One dependency-free ES module (``plugin_template.js``) with paxm's settings embedded as a JSON
literal: the exact hook-client argv for each event and the per-hook timeout.  The slot, the
marker check and the JSON literal are :class:`paxm_core.generated_file.GeneratedFile`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paxm_core.api.json import JSONObject
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
#: how long one Cline hook of the plugin waits for paxm, all paxm hooks it runs together.  Cline
#: fails the whole run when a plugin hook takes more than 3 s, so paxm answers or gives up
#: (fail-open: nothing injected) well inside that.
SPAWN_TIMEOUT_MS = 2_000


def _plugin(template: str = "") -> GeneratedFile:
    # imported here: the hook path (decode, output) never renders or reads the plugin
    from paxm_core.generated_file import GeneratedFile

    return GeneratedFile(template, marker=MARKER)


def _template() -> str:
    from paxm_core.generated_file import template_text  # here: the hook path never renders the plugin

    return template_text(__package__, "plugin_template.js")


def render_plugin(
    commands: Mapping[str, Sequence[str]], *, target: str = "cline", timeout_ms: int = SPAWN_TIMEOUT_MS
) -> str:
    """The plugin source with ``commands`` (paxm event -> hook-client argv) embedded."""
    settings: JSONObject = {
        "version": 1,
        "target": target,
        "timeoutMs": int(timeout_ms),
        "commands": {event: list(argv) for event, argv in commands.items()},
    }
    return _plugin(_template()).render(settings)


def embedded_settings(source: str) -> dict[str, Any] | None:
    """The settings JSON embedded in a generated plugin (``None`` if it is not one)."""
    return _plugin().embedded_settings(source)


def is_paxm_plugin(path: Path) -> bool:
    """Whether ``path`` is a plugin paxm generated (so paxm may replace or delete it)."""
    return _plugin().is_paxm(path)


def write_plugin(path: Path, source: str) -> bool:
    """Write ``source`` to ``path`` atomically, mode 0600; ``False`` when it was already current.

    A current plugin is left as it is, mode included (``path`` may be a link to a file that is
    not paxm's); a new one replaces a link, never writes through it.
    """
    try:
        if path.read_text(encoding="utf-8") == source:
            return False
    except OSError:
        pass
    from paxm_core.integration import write_atomic
    from paxm_core.json_settings import make_private_dirs

    make_private_dirs(path.parent)
    write_atomic(path, source)
    return True
