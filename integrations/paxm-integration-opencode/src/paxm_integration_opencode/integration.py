"""The ``opencode`` integration object: config-dir resolution, install, doctor, decode, output.

A harness that is a fork of OpenCode (same plugin API, its own config dir: Kilo Code ...) is a
small subclass of :class:`OpenCodeIntegration` that sets ``name``/``display_name``/``label``,
:attr:`~OpenCodeIntegration.config_dir_env`, :attr:`~OpenCodeIntegration.xdg_dir_name` and
:attr:`~OpenCodeIntegration.executable`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_USER_INPUT,
    Finding,
    InstallContext,
    IntegrationBase,
    decode_generic,
    enabled_hook_events,
    hook_command,
    parse_hook_command,
    setup_fix_command,
    standard_agent_config,
)
from paxm_integration_opencode import plugin
from paxm_integration_opencode.events import NATIVE_EVENTS, normalized_event

if TYPE_CHECKING:
    from paxm_core.integration import HookEvent, HookResult

__all__ = ["KiloIntegration", "OpenCodeIntegration", "installed_events"]


def installed_events(config: Any, target: str) -> list[str]:
    """paxm events the plugin forwards: ``session_start`` always, others when recall or write is on."""
    return enabled_hook_events(config, target, [native.event for native in NATIVE_EVENTS])


class OpenCodeIntegration(IntegrationBase):
    """OpenCode: a generated plugin in ``<config dir>/plugins/``, plain-text hook output."""

    name = "opencode"
    aliases: tuple[str, ...] = ("open-code", "open_code")
    display_name = "OpenCode"
    label = "OpenCode"
    setup_priority = 40

    #: environment variables naming the config dir, first set wins
    config_dir_env: tuple[str, ...] = ("PAXM_OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_DIR")
    #: the config dir's name under ``$XDG_CONFIG_HOME`` (default ``~/.config``)
    xdg_dir_name = "opencode"
    #: the harness's executable (``detect`` looks for it on ``PATH``)
    executable = "opencode"
    #: the npm package the harness installs into its config dir when a plugin is there
    dependency_package = "@opencode-ai/plugin"

    # -- where things go ------------------------------------------------------------------------

    def config_dir(self) -> Path:
        """The harness's global config dir (env override, then ``$XDG_CONFIG_HOME/<name>``)."""
        for var in self.config_dir_env:
            value = os.environ.get(var, "").strip()
            if value:
                return Path(value).expanduser().absolute()
        xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
        base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
        return (base / self.xdg_dir_name).absolute()

    def plugin_path(self) -> Path:
        """Where paxm's plugin file goes."""
        return self.config_dir() / "plugins" / plugin.PLUGIN_FILE_NAME

    def commands(self, config: Any) -> dict[str, list[str]]:
        """paxm event -> the hook-client argv the plugin runs (same client as every integration)."""
        queue = str(getattr(getattr(config, "capture_queue", None), "path", "") or "")
        out: dict[str, list[str]] = {}
        for event in installed_events(config, self.name):
            native = next(n.native for n in NATIVE_EVENTS if n.event == event)
            out[event] = hook_command(config.path, self.name, native, queue_path=queue or None)
        return out

    def dependency_missing(self) -> bool:
        """Whether the config dir lacks the ``@opencode-ai/plugin`` package OpenCode installs there.

        With any plugin file in ``plugins/`` OpenCode waits, at every start, for that package to
        be installed into the config dir; offline the install retries for about 70 s.
        """
        return not (self.config_dir() / "node_modules" / self.dependency_package / "package.json").is_file()

    def dependency_fix(self) -> str:
        """The command that installs the harness's config-dir dependency once (while online)."""
        return f"cd {self.config_dir()} && npm install {self.dependency_package}@$({self.executable} --version)"

    def plugin_source(self, config: Any) -> str:
        """The plugin file's content for ``config``."""
        return plugin.render_plugin(self.commands(config), target=self.name)

    # -- Integration contract -------------------------------------------------------------------

    def detect(self) -> str | None:
        """The executable on ``PATH``, else the config dir if it exists."""
        found = shutil.which(self.executable)
        if found:
            return found
        directory = self.config_dir()
        return str(directory) if directory.is_dir() else None

    def preflight(self, ctx: InstallContext) -> None:
        """Nothing to merge: paxm owns its plugin file outright, so there is nothing to check."""

    def install(self, ctx: InstallContext) -> list[str]:
        """Write paxm's plugin (idempotent) and replace upstream's ``paxm.ts``; returns the reported lines."""
        context = ctx
        lines: list[str] = []

        def report(line: str) -> None:
            lines.append(line)
            context.echo(line)

        path = self.plugin_path()
        legacy = path.with_name(plugin.LEGACY_FILE_NAME)
        if plugin.is_upstream_plugin(legacy):
            legacy.unlink(missing_ok=True)
            report(f"removed the old paxm plugin {legacy}")
        if plugin.write_plugin(path, self.plugin_source(context.config)):
            report(f"installed the paxm {self.display_name} plugin at {path}")
        else:
            report(f"the paxm {self.display_name} plugin at {path} is up to date")
        if self.dependency_missing():
            report(
                f"  note: {self.display_name} installs {self.dependency_package} into {self.config_dir()} "
                "when it starts with a plugin there; offline that wait is about 70 s. On an offline machine "
                f"run once while online (or from an npm cache): {self.dependency_fix()}"
            )
        return lines

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Delete paxm's plugin file (only if it is paxm's); nothing else in the config dir is touched."""
        context = ctx
        lines: list[str] = []
        path = self.plugin_path()
        legacy = path.with_name(plugin.LEGACY_FILE_NAME)
        if plugin.remove_plugin(path):
            lines.append(f"removed the paxm {self.display_name} plugin {path}")
        if plugin.is_upstream_plugin(legacy) and not plugin.is_paxm_plugin(legacy):
            legacy.unlink(missing_ok=True)
            lines.append(f"removed the old paxm {self.display_name} plugin {legacy}")
        for line in lines:
            context.echo(line)
        return lines

    def check(self, ctx: InstallContext) -> list[Finding]:
        """Plugin present, generated by paxm, for this config, and its interpreter and client exist."""
        context = ctx
        path = self.plugin_path()
        fix = setup_fix_command(context, self.name)
        try:
            source = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return [Finding("error", f"{self.display_name} plugin missing: {path}", fix)]
        except OSError as exc:
            return [Finding("error", f"{self.display_name} plugin unreadable: {path}: {exc.strerror or exc}", fix)]
        settings = plugin.embedded_settings(source)
        if settings is None:
            return [Finding("error", f"{path} is not a plugin paxm generated", f"move it away, then {fix}")]
        raw_commands = settings.get("commands")
        commands: dict[str, Any] = raw_commands if isinstance(raw_commands, dict) else {}
        findings: list[Finding] = []
        if not commands:
            findings.append(Finding("warn", f"{self.display_name} plugin at {path} forwards no events", fix))
        missing: set[str] = set()
        config_path = str(Path(context.config.path).expanduser().absolute())
        other_config = False
        for argv in commands.values():
            hook = parse_hook_command(argv) if isinstance(argv, list) else None
            if hook is None:
                continue
            missing.update(item for item in (hook.interpreter, hook.client) if not Path(item).exists())
            if hook.config and hook.config != config_path:
                other_config = True
        for item in sorted(missing):
            findings.append(Finding("error", f"{self.display_name} plugin points at a missing file: {item}", fix))
        if other_config:
            findings.append(Finding("warn", f"{self.display_name} plugin at {path} uses another paxm config", fix))
        if path.read_text(encoding="utf-8") != self.plugin_source(context.config) and not findings:
            findings.append(Finding("warn", f"{self.display_name} plugin at {path} is out of date", fix))
        if not findings:
            findings.append(Finding("ok", f"{self.display_name} plugin installed at {path}"))
        if self.dependency_missing():
            findings.append(
                Finding(
                    "warn",
                    f"{self.display_name} has not installed {self.dependency_package} in {self.config_dir()} yet: "
                    "offline, each start waits about 70 s for it",
                    self.dependency_fix(),
                )
            )
        return findings

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """The plugin's payload -> :class:`HookEvent` (never raises).

        The plugin already sends paxm's field names (``prompt``, ``last_assistant_message``,
        ``messages`` with visible text only, ``tool_name``/``tool_input``/``tool_response``,
        ``session_id``, ``cwd``, ``workspace``); what is OpenCode-specific is the event names.
        """
        event = normalized_event(native_event) or EVENT_USER_INPUT
        return decode_generic(raw, self.name, event, native_event.strip())

    def hook_output(self, result: HookResult, mode: str) -> str:
        """What the plugin reads on stdout: the context blocks for session start and prompts, else nothing.

        The generated plugin runs the client in ``text`` mode; other modes get the generic output.
        """
        if mode != "text":
            return super().hook_output(result, mode)
        if result.ignored or result.event not in (EVENT_SESSION_START, EVENT_USER_INPUT):
            return ""
        context = result.context
        return context if context.strip() else ""


class KiloIntegration(OpenCodeIntegration):
    """Kilo Code (the ``kilo`` CLI): OpenCode's plugin API unchanged, its own config dir ``~/.config/kilo``.

    Kilo reads ``kilo.json`` (and ``opencode.json``) and loads ``plugins/*.js`` from that dir,
    and installs ``@kilocode/plugin`` there when a plugin is present.  Kilo publishes CLI
    releases without a matching ``@kilocode/plugin`` release (7.7.9 has none), and Kilo only
    checks the package *name* against ``package-lock.json``, so the fix installs the latest.
    """

    name = "kilo"
    aliases: tuple[str, ...] = ("kilo-code", "kilocode", "kilo_code", "kilo-cli")
    display_name = "Kilo Code"
    label = "Kilo Code"
    setup_priority = 41
    config_dir_env: tuple[str, ...] = ("PAXM_KILO_CONFIG_DIR", "KILO_CONFIG_DIR")
    xdg_dir_name = "kilo"
    executable = "kilo"
    dependency_package = "@kilocode/plugin"

    def default_agent_config(self) -> Mapping[str, Any]:
        """OpenCode's defaults (upstream's, which the core keeps as data): recall on prompts, capture turns."""
        return standard_agent_config(write_events=("turn_end",))

    def dependency_fix(self) -> str:
        """``npm install @kilocode/plugin`` in the config dir (any version satisfies Kilo's check)."""
        return f"cd {self.config_dir()} && npm install {self.dependency_package}"
