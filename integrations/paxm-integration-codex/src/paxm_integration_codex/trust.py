"""Codex hook trust: ask the installed Codex which hooks it would run, and trust paxm's.

Codex skips a hook until it is trusted in ``config.toml`` (``[hooks.state."<key>"]`` with
``trusted_hash`` and, for plugin hooks, ``trusted_content_hash``).  Rather than re-implement
Codex's hash, paxm asks ``codex app-server`` (``hooks/list``) for each hook's key, hash and
status; a plugin hook's ``"<hook hash>/<content hash>"`` is stored as the two fields.  Only
paxm's config hooks and paxm's plugin's hooks are ever trusted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported by record_trust, which edits TOML, not when the plugin loads
    import tomlkit

__all__ = ["HookTrust", "TrustError", "find_codex", "list_hooks", "record_trust", "trust_command"]

#: seconds to wait for ``codex app-server`` to answer (it starts in well under a second)
LIST_TIMEOUT = 30.0


class TrustError(RuntimeError):
    """The installed Codex could not be asked about its hooks."""


@dataclass(frozen=True)
class HookTrust:
    """One hook as ``hooks/list`` reports it."""

    key: str
    command: str
    current_hash: str
    status: str
    source_path: str = ""
    plugin_id: str = ""

    @property
    def trusted(self) -> bool:
        """Codex will run it."""
        return self.status == "trusted"

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> HookTrust:
        return cls(
            key=str(raw.get("key") or ""),
            command=str(raw.get("command") or ""),
            current_hash=str(raw.get("currentHash") or ""),
            status=str(raw.get("trustStatus") or ""),
            source_path=str(raw.get("sourcePath") or ""),
            plugin_id=str(raw.get("pluginId") or ""),
        )


def find_codex(environ: Mapping[str, str] | None = None) -> str | None:
    """The ``codex`` executable: ``$PAXM_CODEX_BINARY`` or ``codex`` on PATH."""
    env = os.environ if environ is None else environ
    explicit = env.get("PAXM_CODEX_BINARY", "").strip()
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("codex", path=env.get("PATH"))


def list_hooks(
    codex: str, cwd: Path, *, env: Mapping[str, str] | None = None, timeout: float = LIST_TIMEOUT
) -> list[HookTrust]:
    """Every hook the installed Codex sees for ``cwd``, with its hash and trust status."""
    try:
        process = subprocess.Popen(
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=dict(env) if env is not None else None,
            cwd=str(cwd) if cwd.is_dir() else None,
        )
    except OSError as exc:
        raise TrustError(f"cannot start {codex} app-server: {exc.strerror or exc}") from exc
    answer: dict[str, Any] = {}

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == 2:
                answer.update(message)
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert process.stdin is not None
        for message in (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"clientInfo": {"name": "paxm", "version": "0.1.0"}},
            },
            {"jsonrpc": "2.0", "method": "initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
        ):
            process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()
        reader.join(timeout)
    except OSError as exc:
        raise TrustError(f"{codex} app-server closed its input: {exc.strerror or exc}") from exc
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(5)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass
    if "result" not in answer:
        error = answer.get("error")
        detail = f": {error.get('message')}" if isinstance(error, dict) else f" within {timeout:g} s"
        raise TrustError(f"{codex} app-server did not list its hooks{detail}")
    data = answer["result"].get("data") if isinstance(answer["result"], dict) else None
    hooks: list[HookTrust] = []
    for entry in data if isinstance(data, list) else []:
        for raw in entry.get("hooks", []) if isinstance(entry, dict) else []:
            if isinstance(raw, dict):
                hooks.append(HookTrust.from_wire(raw))
    return hooks


def record_trust(doc: tomlkit.TOMLDocument, hooks: list[HookTrust], is_ours: Callable[[HookTrust], bool]) -> list[str]:
    """Write ``[hooks.state]`` trust for every hook ``is_ours`` accepts that is not trusted yet."""
    import tomlkit

    trusted: list[str] = []
    for hook in hooks:
        if hook.trusted or not hook.current_hash or not is_ours(hook):
            continue
        hooks_table = doc.get("hooks")
        if not isinstance(hooks_table, dict):
            doc["hooks"] = tomlkit.table()
            hooks_table = doc["hooks"]
        state = hooks_table.get("state")
        if not isinstance(state, dict):
            state = tomlkit.table(is_super_table=True)
            hooks_table["state"] = state
            state = hooks_table["state"]
        hook_hash, _, content_hash = hook.current_hash.partition("/")
        entry = tomlkit.table()  # replaced wholesale: a stale hash never survives
        entry["trusted_hash"] = hook_hash
        if content_hash:
            entry["trusted_content_hash"] = content_hash
        if hook.key in state:
            del state[hook.key]
        state[hook.key] = entry
        trusted.append(hook.key)
    return trusted


def trust_command() -> str:
    """What a user runs to trust paxm's hooks by hand."""
    return (
        "open codex, type /hooks and press t to trust paxm's hooks "
        "(or, once codex is on PATH, run: paxm setup --yes --agent codex --force)"
    )
