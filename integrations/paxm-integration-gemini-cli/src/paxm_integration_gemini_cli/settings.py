"""Gemini CLI's ``settings.json``: Claude-shaped ``hooks`` (the core's :mod:`paxm_core.json_settings`).

``hooks`` is ``{Event: [{"matcher"?: ..., "hooks": [{"type": "command", "command": ...}]}]}``;
Gemini also accepts the switches ``enabled`` / ``disabled`` / ``notifications`` inside ``hooks``
(older releases' place for ``hooksConfig``), which are not events and are left alone.  A
handler is paxm's when its command runs paxm's hook client with ``--target <target>`` for this
paxm config file; nothing else is ever changed, and everything else keeps its content and order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from paxm_core.integration import is_paxm_hook
from paxm_core.json_settings import (
    BACKUP_SUFFIX,
    hooks_section,
    merge_hook_groups,
    read_json_object,
    write_json_object,
)

__all__ = [
    "BACKUP_SUFFIX",
    "COMMENTS_HINT",
    "CONFIG_FIELDS",
    "is_paxm_command",
    "merge_hooks",
    "read_settings",
    "write_settings",
]

#: keys of ``hooks`` that are switches, not events (Gemini skips them when it loads hooks)
CONFIG_FIELDS = frozenset({"enabled", "disabled", "notifications"})
IsOurs = Callable[[str], bool]
#: Gemini's settings may hold comments, which a JSON rewrite cannot keep
COMMENTS_HINT = "paxm cannot keep comments when it rewrites the file; remove them or add paxm's hooks by hand"


def is_paxm_command(command: str, config_path: str | os.PathLike[str], target: str) -> bool:
    """Whether ``command`` runs paxm's hook client for ``target`` and the config file ``config_path``."""
    return is_paxm_hook(command, config_path, target)


def merge_hooks(
    settings: Mapping[str, Any], wanted: Mapping[str, dict[str, Any]], is_ours: IsOurs, *, where: str = "settings"
) -> dict[str, Any]:
    """``settings`` with exactly the paxm groups in ``wanted`` (native event -> group); switches untouched."""
    return merge_hook_groups(settings, wanted, is_ours, where=where, switches=CONFIG_FIELDS)


def read_settings(path: Path, what: str) -> tuple[dict[str, Any], bytes | None]:
    """The parsed settings and the original bytes (``None`` when the file does not exist).

    :raises IntegrationError: the file is unreadable, not a JSON object, or its ``hooks`` are malformed.
    """
    value, original = read_json_object(path, what, hint=COMMENTS_HINT)
    hooks_section(value, str(path), switches=CONFIG_FIELDS)
    return value, original


def write_settings(path: Path, settings: Mapping[str, Any], original: bytes | None) -> None:
    """Write ``settings`` (2-space JSON, 0600, atomic; the first change keeps ``<name>.paxm.bak``)."""
    write_json_object(path, settings, original)
