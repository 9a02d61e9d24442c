"""The generated Cline plugin: ``plugin_template.js`` with paxm's settings embedded (the hook-client
argv per event and the per-hook timeout), in :class:`paxm_core.generated_file.GeneratedFile`'s format."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paxm_core.generated_file import GeneratedFile

__all__ = ["MARKER", "PLUGIN_FILE_NAME", "SPAWN_TIMEOUT_MS", "plugin_file", "render_plugin"]

#: the file paxm writes into Cline's ``plugins/`` directory
PLUGIN_FILE_NAME = "paxm.js"
#: first-lines marker that says a file is paxm's generated plugin (uninstall removes only those)
MARKER = "// paxm-cline-plugin v1"
#: how long one Cline hook of the plugin waits for paxm, all paxm hooks it runs together: Cline
#: fails the whole run when a plugin hook takes more than 3 s
SPAWN_TIMEOUT_MS = 2_000


@cache
def plugin_file() -> GeneratedFile:
    """The plugin's format (``plugin_template.js``, its marker): it reads, recognises and writes the plugin."""
    # imported here: the hook path (decode, output) never renders or reads the plugin
    from paxm_core.generated_file import GeneratedFile, template_text

    return GeneratedFile(template_text(__package__, "plugin_template.js"), marker=MARKER)


def render_plugin(
    commands: Mapping[str, Sequence[str]], *, target: str = "cline", timeout_ms: int = SPAWN_TIMEOUT_MS
) -> str:
    """The plugin source with ``commands`` (paxm event -> hook-client argv) embedded."""
    argv = {event: list(args) for event, args in commands.items()}
    return plugin_file().render({"version": 1, "target": target, "timeoutMs": int(timeout_ms), "commands": argv})
