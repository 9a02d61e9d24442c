"""The generated OpenCode plugin file: its format.

The plugin is one dependency-free ES module (``plugin_template.js``) with paxm's settings
embedded as a JSON literal: the exact hook-client argv for each event and the timeout.  Writing,
recognising and removing it is :class:`paxm_core.generated_file.GeneratedFile`'s job.
"""

from __future__ import annotations

from functools import cache

from paxm_core.generated_file import GeneratedFile, template_text

__all__ = [
    "LEGACY_FILE_NAME",
    "MARKER",
    "PLUGIN_FILE_NAME",
    "plugin_file",
]

#: the file paxm writes into ``<config dir>/plugins/`` (JavaScript, so OpenCode needs no
#: TypeScript types and paxm needs no ``@opencode-ai/plugin`` package)
PLUGIN_FILE_NAME = "paxm.js"
#: upstream (the Go paxm) wrote ``paxm.ts``; setup replaces it so nothing fires twice
LEGACY_FILE_NAME = "paxm.ts"
#: first-lines marker that says a file is paxm's generated plugin (uninstall removes only those)
MARKER = "// paxm-opencode-plugin v1"
#: what the Go paxm's generated plugin contains (its payload schema and shim variable)
_UPSTREAM_MARKERS = ("paxm.opencode.user_input.v1", "paxmUserInputHookCommand")


@cache
def plugin_file() -> GeneratedFile:
    """The plugin's format: template, marker and upstream's markers."""
    template = template_text(__package__, "plugin_template.js")
    return GeneratedFile(template=template, marker=MARKER, upstream_markers=_UPSTREAM_MARKERS)
