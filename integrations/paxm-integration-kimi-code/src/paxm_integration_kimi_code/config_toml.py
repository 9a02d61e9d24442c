"""Kimi Code's ``config.toml``: merge paxm's ``[[hooks]]`` tables in and take them out, keeping the rest.

The file is edited with tomlkit, so the user's comments, key order and formatting survive.  A
``[[hooks]]`` table is paxm's when its ``command`` runs paxm's hook client with ``--target
<name>`` (or an old alias) for this paxm config file; nothing else is ever touched.  Kimi
refuses a config whose hook tables carry any key besides ``event``/``matcher``/``command``/
``timeout``, so paxm marks nothing and adds no key of its own.

Upstream (the Go paxm) wrote its hooks as a text block between two marker comments; that block
is removed whenever paxm rewrites the file, so nothing fires twice.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from paxm_core.integration import IntegrationError, is_paxm_hook, write_atomic

__all__ = [
    "BACKUP_SUFFIX",
    "UPSTREAM_BEGIN",
    "UPSTREAM_END",
    "KimiConfig",
    "is_paxm_command",
    "read_config",
    "write_config",
]

BACKUP_SUFFIX = ".paxm.bak"
UPSTREAM_BEGIN = "# >>> paxm managed kimi hooks >>>"
UPSTREAM_END = "# <<< paxm managed kimi hooks <<<"
IsOurs = Callable[[str], bool]


def is_paxm_command(command: str, config_path: str | os.PathLike[str], targets: Sequence[str]) -> bool:
    """Whether ``command`` runs paxm's hook client for one of ``targets`` and the config ``config_path``."""
    return is_paxm_hook(command, config_path, targets)


def _strip_upstream_block(text: str, where: str) -> str:
    begin, end = text.find(UPSTREAM_BEGIN), text.find(UPSTREAM_END)
    if begin < 0 and end < 0:
        return text
    if begin < 0 or end < begin:
        raise IntegrationError(
            f"{where}: unbalanced paxm marker comments ({UPSTREAM_BEGIN!r} / {UPSTREAM_END!r}); "
            "fix or remove them, paxm changed nothing"
        )
    stop = text.find("\n", end)
    stop = len(text) if stop < 0 else stop + 1
    return text[:begin] + text[stop:]


class KimiConfig:
    """One parsed ``config.toml`` (tomlkit document) and its original bytes."""

    def __init__(self, path: Path, document: Any, original: bytes | None, had_upstream_block: bool) -> None:
        self.path = path
        self.document = document
        self.original = original
        self.had_upstream_block = had_upstream_block

    def _hooks(self) -> Any:
        hooks = self.document.get("hooks")
        if hooks is None:
            return None
        from tomlkit.items import AoT

        if not isinstance(hooks, AoT):
            raise IntegrationError(f"{self.path}: hooks must be [[hooks]] tables; paxm changed nothing")
        return hooks

    def paxm_hooks(self, is_ours: IsOurs) -> list[dict[str, Any]]:
        """paxm's hook tables as plain dicts, in file order."""
        hooks = self._hooks()
        out = []
        for table in hooks or []:
            command = table.get("command")
            if isinstance(command, str) and is_ours(command):
                out.append({str(k): _plain(v) for k, v in table.items()})
        return out

    def merge(self, wanted: list[dict[str, Any]], is_ours: IsOurs) -> bool:
        """Make paxm's hook tables exactly ``wanted``; ``True`` when the document changed."""
        import tomlkit

        if self.paxm_hooks(is_ours) == wanted and not self.had_upstream_block:
            return False
        hooks = self._hooks()
        if hooks is not None:
            for index in reversed(range(len(hooks))):
                command = hooks[index].get("command")
                if isinstance(command, str) and is_ours(command):
                    del hooks[index]
        if wanted:
            if hooks is None:
                hooks = tomlkit.aot()
                self.document.append("hooks", hooks)
            for entry in wanted:
                table = tomlkit.table()
                for key, value in entry.items():
                    table.add(key, value)
                table.add(tomlkit.nl())
                hooks.append(table)
        elif hooks is not None and len(hooks) == 0:
            del self.document["hooks"]
        return True

    def text(self) -> str:
        import tomlkit

        return tomlkit.dumps(self.document)


def _plain(value: Any) -> Any:
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def read_config(path: Path) -> KimiConfig:
    """Parse ``path`` (a missing file is an empty document).

    :raises IntegrationError: unreadable, not TOML, or ``hooks`` of the wrong shape (the file is
        never rewritten then).
    """
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        original: bytes | None = path.read_bytes()
    except FileNotFoundError:
        original = None
    except OSError as exc:
        raise IntegrationError(f"cannot read Kimi Code config {path}: {exc.strerror or exc}") from exc
    text = (original or b"").decode("utf-8-sig", errors="replace")
    stripped = _strip_upstream_block(text, str(path))
    try:
        document = tomlkit.parse(stripped)
    except TOMLKitError as exc:
        raise IntegrationError(
            f"Kimi Code config {path} is not valid TOML ({exc}); fix it, paxm changed nothing"
        ) from None
    config = KimiConfig(path, document, original, stripped != text)
    config._hooks()  # shape check now, before anything is written
    return config


def _mkdir_private(path: Path) -> None:
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)


def write_config(config: KimiConfig) -> None:
    """Write the document back atomically, 0600, at a symlink's target.

    The first time paxm changes an existing non-empty file its original is kept beside it as
    ``config.toml.paxm.bak`` (never overwritten later).  When the document no longer has any
    content at all, the file is removed instead (an empty config and none are the same to Kimi).
    """
    path = config.path
    target = Path(os.path.realpath(path))
    text = config.text()
    if not text.strip():  # nothing left but paxm's own hooks: no file is the same config
        path.unlink(missing_ok=True)
        return
    _mkdir_private(target.parent)
    if config.original is not None and config.original.strip():
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        if not backup.exists():
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(config.original)
    write_atomic(target, text)
