"""An IDE's JSON config file: read it strictly, write it back privately, only when it changed.

Nothing here knows an IDE.  A file paxm cannot parse is never rewritten: the error says which
file and where, and that paxm changed nothing.  The first time paxm changes an existing
non-empty file the original is kept beside it as ``<name>.paxm.bak`` (never overwritten).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from paxm_core.integration import write_atomic
from paxm_core.json_settings import make_private_dirs, read_json_object

__all__ = ["BACKUP_SUFFIX", "dumps_file", "make_parents", "read_object", "write_object"]

BACKUP_SUFFIX = ".paxm.bak"


def read_object(path: Path, what: str) -> tuple[dict[str, Any], bytes | None]:
    """The file's JSON object and its original bytes (``None`` when the file does not exist).

    An empty (or whitespace-only) file reads as ``{}``.

    :raises IntegrationError: unreadable, not JSON, or not a JSON object.
    """
    return read_json_object(path, what)


def make_parents(path: Path) -> list[Path]:
    """Create the missing parents of ``path``, each 0700 (existing ones, the IDE's, are left alone).

    Returns the directories created, outermost first.
    """
    return make_private_dirs(path.parent)


def dumps_file(value: Any) -> str:
    """How paxm writes an IDE's JSON file: 2-space indent, UTF-8 kept, a final newline."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def write_object(
    path: Path, value: dict[str, Any], original: bytes | None, *, backup: bool = True, made: list[Path] | None = None
) -> bool:
    """Write ``value`` to ``path`` (0600, atomically, at a symlink's target) unless nothing changed.

    Returns whether the file was written.  Missing parent directories are created 0700.
    :param backup: keep the original as ``<name>.paxm.bak`` if there is none yet (install does;
        uninstall, and files paxm created, do not).
    :param made: collects the directories created for the file.
    """
    data = dumps_file(value)
    if original is not None and original.decode("utf-8-sig", errors="replace").strip() == data.strip():
        return False
    target = Path(os.path.realpath(path))
    created = make_parents(target)
    if made is not None:
        made.extend(created)
    if backup and original is not None and original.strip():
        kept = path.with_name(path.name + BACKUP_SUFFIX)
        try:
            fd = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # the first original is the one worth keeping
        else:
            with os.fdopen(fd, "wb") as handle:
                handle.write(original)
    write_atomic(target, data)
    return True
