"""The generated Pi extension file: its format.

The extension is one dependency-free module (``extension_template.ts``, TypeScript that is also
plain JavaScript) with paxm's settings embedded as a JSON literal: the exact hook-client argv
for each event and the timeout.  Writing, recognising and removing it is
:class:`paxm_core.generated_file.GeneratedFile`'s job.
"""

from __future__ import annotations

from functools import cache

from paxm_core.generated_file import GeneratedFile, template_text

__all__ = [
    "EXTENSION_DIR_NAME",
    "EXTENSION_FILE_NAME",
    "MARKER",
    "extension_file",
]

#: the directory paxm owns under ``<agent dir>/extensions/`` (upstream's name, so setup replaces
#: the Go paxm's extension in place and Pi never loads both)
EXTENSION_DIR_NAME = "paxm-hook"
#: Pi auto-discovers ``extensions/<name>/index.ts``
EXTENSION_FILE_NAME = "index.ts"
#: first-lines marker that says a file is paxm's generated extension (uninstall removes only those)
MARKER = "// paxm-pi-extension v1"
#: what the Go paxm's generated extension contains (its shim variables and payload schema)
_UPSTREAM_MARKERS = ("paxmUserInputHookCommand", "paxm.pi.user_input.v1")


@cache
def extension_file() -> GeneratedFile:
    """The extension's format: template, marker and upstream's markers (searched in 256 KiB)."""
    template = template_text(__package__, "extension_template.ts")
    return GeneratedFile(template=template, marker=MARKER, upstream_markers=_UPSTREAM_MARKERS, upstream_scan=262_144)
