"""An IDE's JSON config file as paxm writes it: only when it changed, privately, with a backup.

Nothing here knows an IDE.  Reading (strictly: a file paxm cannot parse is never rewritten) and
the private atomic write are :mod:`paxm_core.json_settings`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paxm_core.json_settings import write_json_object

__all__ = ["dumps_file", "write_object"]


def dumps_file(value: Any) -> str:
    """How paxm writes an IDE's JSON file: 2-space indent, UTF-8 kept, a final newline."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def write_object(
    path: Path, value: dict[str, Any], original: bytes | None, *, backup: bool = True, made: list[Path] | None = None
) -> bool:
    """Write ``value`` to ``path`` (0600, atomically, at a symlink's target) unless nothing changed."""
    if original is not None and original.decode("utf-8-sig", errors="replace").strip() == dumps_file(value).strip():
        return False
    created = write_json_object(path, value, original if backup else None)
    if made is not None:
        made.extend(created)
    return True
