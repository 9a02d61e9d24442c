"""What every IDE integration here shares: hook commands, the native files, setup / uninstall / doctor.

A subclass names its events (paxm event -> the IDE's event name), its output mode and its
files (:meth:`IdeIntegration.native_files`); this class runs preflight, install, uninstall
and check over those files.  Hook commands are the core's fail-open command
(:func:`~paxm_core.integration.hook_command_line`), so a hook keeps the IDE working when paxm
is gone.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.api.errors import IntegrationError
from paxm_core.integration import (
    EVENT_USER_INPUT,
    Finding,
    InstallContext,
    IntegrationBase,
    Report,
    decode_generic,
    enabled_hook_events,
    hook_command_line,
    named_event,
    parse_hook_command,
    queue_path,
    setup_fix_command,
)
from paxm_integration_ide.entries import IsOurs, is_paxm_command, paxm_commands
from paxm_integration_ide.mcp import SERVER_NAME, is_paxm_server
from paxm_integration_ide.native import FileState, JsonEdit, NativeFile
from paxm_integration_ide.shapes import event_arrays, merge_events, nested, set_nested

if TYPE_CHECKING:
    from paxm_core.integration import HookEvent

__all__ = ["Binding", "IdeIntegration", "env_path", "home"]


@dataclass(frozen=True)
class Binding:
    """One installed hook: paxm's ``event``, the IDE's ``native`` event name, an optional matcher."""

    event: str
    native: str
    matcher: str = ""


def home() -> Path:
    """The user's home directory (``$HOME``; tests point it at a temp dir)."""
    return Path(os.path.expanduser("~"))


def env_path(variable: str, default: Path) -> Path:
    """``$variable`` (``~`` expanded) when set and not blank, else ``default``; absolute."""
    value = os.environ.get(variable, "").strip()
    return (Path(value).expanduser() if value else default).absolute()


def desktop_app_dir(app: str) -> Path:
    """An Electron app's user-data directory: ``~/Library/Application Support`` on macOS,
    ``%APPDATA%`` on Windows, ``$XDG_CONFIG_HOME`` (default ``~/.config``) elsewhere."""
    if sys.platform == "darwin":
        return home() / "Library" / "Application Support" / app
    if sys.platform == "win32" and os.environ.get("APPDATA", "").strip():
        return Path(os.environ["APPDATA"]) / app
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else home() / ".config") / app


class IdeIntegration(IntegrationBase):
    """An IDE whose hooks and MCP server paxm registers in the IDE's own config files."""

    #: installed hooks, in order
    bindings: tuple[Binding, ...] = ()
    #: the hook client's output mode for this IDE (``text`` prints the context blocks)
    mode: str = "text"
    #: executables whose presence on PATH means the IDE is installed
    executables: tuple[str, ...] = ()

    def native_files(self, config: Any) -> list[NativeFile]:
        """The files install changes for ``config`` (hooks first, then the MCP registration)."""
        raise NotImplementedError

    def config_dirs(self) -> list[Path]:
        """Directories whose existence means the IDE has been used on this machine."""
        return []

    def installed_events(self, config: Any) -> list[str]:
        """``session_start`` always; the other bound events when their recall or write is enabled."""
        return enabled_hook_events(config, self.name, [b.event for b in self.bindings])

    def wanted_commands(self, config: Any) -> dict[str, str]:
        """The IDE's native event -> paxm's hook command for it, for the events ``config`` enables."""
        queue = queue_path(config)
        events = self.installed_events(config)
        return {
            b.native: hook_command_line(config.path, self.name, b.event, mode=self.mode, queue_path=queue)
            for b in self.bindings
            if b.event in events
        }

    def hooks_edit(
        self,
        config: Any,
        path: Path,
        what: str,
        keys: tuple[str, ...],
        entry: Callable[[str, Binding], dict[str, Any]],
        *,
        grouped: bool,
        version: str = "",
        check: Callable[[dict[str, Any]], None] = lambda data: None,
    ) -> JsonEdit:
        """The edit keeping paxm's ``entry(command, binding)`` in each event array at ``keys``.

        ``version`` (``"first"`` or ``"last"``) is where ``"version": 1`` goes into a file without
        one; ``check`` refuses a shape of the IDE's own before the event arrays are checked.
        """
        where = str(path)
        is_ours = self.is_ours(config)
        bindings = {b.native: b for b in self.bindings}

        def validate(data: dict[str, Any]) -> None:
            check(data)
            event_arrays(nested(data, keys, where), where, ".".join(keys))

        def update(data: dict[str, Any], install: bool) -> dict[str, Any]:
            wanted = self.wanted_commands(config) if install else {}
            entries = {native: entry(command, bindings[native]) for native, command in wanted.items()}
            if version == "first" and install and "version" not in data:
                data = {"version": 1, **data}
            if install or nested(data, keys[:-1], where).get(keys[-1]) is not None:
                set_nested(data, keys, merge_events(nested(data, keys, where), entries, is_ours, grouped=grouped))
            if version == "last" and install and "version" not in data:
                data["version"] = 1
            return data

        def commands(data: dict[str, Any]) -> list[str]:
            return paxm_commands(nested(data, keys[:-1], where).get(keys[-1]), is_ours)

        scalars = {"version": 1} if version else {}
        return JsonEdit(path=path, what=what, update=update, validate=validate, scalars=scalars, commands=commands)

    def is_ours(self, config: Any) -> IsOurs:
        """A predicate: is this command paxm's hook for this agent and ``config``'s file?"""
        path = config.path
        return lambda command: is_paxm_command(command, path, self.name)

    def _state(self, config: Any) -> FileState:
        return FileState(Path(config.path).absolute().parent / "integrations" / "ide" / f"{self.name}.json")

    def detect(self) -> str | None:
        """The IDE's executable on PATH, else a config directory it made."""
        for exe in self.executables:
            found = shutil.which(exe)
            if found:
                return found
        for directory in self.config_dirs():
            if directory.is_dir():
                return str(directory)
        return None

    def preflight(self, ctx: InstallContext) -> None:
        """Every file parses and has a shape paxm can merge into; nothing is written."""
        for native in self.native_files(ctx.config):
            native.preflight()

    def install(self, ctx: InstallContext) -> list[str]:
        """Write paxm's hooks and MCP server into the IDE's files (idempotent)."""
        files = self.native_files(ctx.config)
        for native in files:  # all or nothing: refuse before the first write
            native.preflight()
        state, report = self._state(ctx.config), Report(ctx)
        if self.detect() is None:
            report(f"{self.display_name} was not found on this machine; its hooks work once it is installed")
        for native in files:
            changed = native.install(state)
            report(f"{'wrote' if changed else 'up to date:'} {native.what} {native.path}")
        return report

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Take exactly paxm's entries out of the IDE's files (a file paxm created goes when empty)."""
        state, report = self._state(ctx.config), Report(ctx)
        errors = []
        for native in self.native_files(ctx.config):
            try:
                if native.uninstall(state):
                    report(f"removed paxm from {native.what} {native.path}")
            except IntegrationError as exc:
                if state.get(native.path) is not None:  # paxm wrote there: the user must hear it
                    errors.append(f"{exc}; paxm's entries are still in it")
                # else paxm never installed into this file; a file it cannot read is not its business
        if not state.files:  # every file is back to the user's: the directories paxm made can go
            state.remove_dirs()
        if errors:
            raise IntegrationError("; ".join(errors))
        return report

    def check(self, ctx: InstallContext) -> list[Finding]:
        """Hooks and MCP server in place as install writes them, and every path they run exists."""
        fix = setup_fix_command(ctx, self.name)
        findings: list[Finding] = []
        for native in self.native_files(ctx.config):
            try:
                complete, commands = native.installed()
            except IntegrationError as exc:
                findings.append(Finding("error", str(exc), f"fix {native.path}, then {fix}"))
                continue
            if not complete:
                findings.append(
                    Finding("warn", f"paxm's entries in {native.what} {native.path} are missing or out of date", fix)
                )
            for command in commands:
                hook = parse_hook_command(command)
                for part in hook.files if hook else ():
                    if not Path(part).exists():
                        findings.append(
                            Finding("error", f"a paxm hook in {native.path} runs a missing file: {part}", fix)
                        )
            if complete:
                findings.extend(self._check_server(native, fix))
        if not findings:
            findings.append(Finding("ok", "hooks and MCP server registered; every path they run exists"))
        return findings

    def _check_server(self, native: NativeFile, fix: str) -> list[Finding]:
        """An MCP file: the registered ``paxm`` command must exist."""
        from paxm_core.json_settings import read_json_object

        try:
            data, _ = read_json_object(native.path, native.what)
        except IntegrationError:
            return []
        mcp = data.get("mcp")
        for servers in (data.get("mcpServers"), mcp.get("servers") if isinstance(mcp, dict) else None):
            entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
            command = str(entry.get("command", "")) if isinstance(entry, dict) else ""
            if is_paxm_server(entry) and not Path(command).exists():
                message = f"the paxm MCP server in {native.path} runs a missing file: {command}"
                return [Finding("error", message, fix)]
        return []

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """The IDE's payload -> :class:`HookEvent`; the event name may be paxm's or the IDE's (never raises)."""
        by_native = {b.native.lower(): b for b in self.bindings}
        by_event = {b.event: b for b in self.bindings}
        key = named_event(native_event, raw).strip()
        binding = by_event.get(key) or by_native.get(key.lower())
        event = binding.event if binding else (key or EVENT_USER_INPUT)
        return decode_generic(raw, self.name, event, binding.native if binding else key)
