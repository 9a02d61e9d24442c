"""The ``cline`` integration object: a generated plugin in ``~/.cline/plugins``, payload decoding, output."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    Finding,
    InstallContext,
    IntegrationBase,
    IntegrationError,
    Report,
    decode_generic,
    detect_harness,
    enabled_hook_events,
    env_path,
    hook_command,
    missing_file_findings,
    named_event,
    queue_path,
    setup_fix_command,
    standard_agent_config,
)
from paxm_integration_cline.plugin import PLUGIN_FILE_NAME, plugin_file, render_plugin

if TYPE_CHECKING:
    from paxm_core.integration import HookEvent, HookResult

__all__ = ["EVENTS", "UPSTREAM_HOOK_MARKER", "ClineIntegration"]

#: the paxm events the plugin runs a hook for, in order
EVENTS = (EVENT_SESSION_START, EVENT_USER_INPUT, EVENT_TOOL_USE, EVENT_TURN_END)
#: upstream (the Go paxm) wrote one script per Cline hook into ``~/.cline/hooks`` with this line;
#: Cline's hook files cannot inject context, so setup removes them in favour of the plugin
UPSTREAM_HOOK_MARKER = "# managed by paxm"
UPSTREAM_HOOK_FILES = ("TaskStart", "TaskResume", "UserPromptSubmit", "TaskComplete", "TaskCancel")
#: Cline's own hook names (upstream's hook files; the plugin sends paxm's names)
_NATIVE = {
    "taskstart": EVENT_SESSION_START,
    "taskresume": EVENT_SESSION_START,
    "userpromptsubmit": EVENT_USER_INPUT,
    "posttooluse": EVENT_TOOL_USE,
    "taskcomplete": EVENT_TURN_END,
    "taskcancel": EVENT_TURN_END,
    "beforerun": EVENT_USER_INPUT,
    "aftertool": EVENT_TOOL_USE,
    "afterrun": EVENT_TURN_END,
}
#: the hook client's own ceiling (s) for the events Cline waits on: inside the plugin's 2 s budget
CLIENT_TIMEOUT_S = 1.8


class ClineIntegration(IntegrationBase):
    """Cline (the CLI and its SDK): a dependency-free plugin calls paxm's hook client."""

    name = "cline"
    aliases: tuple[str, ...] = ("cline-cli",)
    display_name = "Cline"
    label = "Cline"
    setup_priority = 55

    def default_agent_config(self) -> dict[str, Any]:
        """Recall on every prompt; prompt, tool results and reply captured (turn end flushes)."""
        return standard_agent_config(write_events=("session_start", "user_input", "tool_use", "turn_end"))

    def cline_dir(self) -> Path:
        """``$CLINE_DIR`` > ``~/.cline``."""
        return env_path("CLINE_DIR") or (Path.home() / ".cline").absolute()

    def plugins_dir(self) -> Path:
        """``$PAXM_CLINE_PLUGINS_DIR`` > ``~/.cline/plugins``."""
        return env_path("PAXM_CLINE_PLUGINS_DIR") or self.cline_dir() / "plugins"

    def plugin_path(self) -> Path:
        return self.plugins_dir() / PLUGIN_FILE_NAME

    def hooks_dir(self) -> Path:
        """Upstream's hook files: ``$PAXM_CLINE_HOOKS_DIR`` > ``$CLINE_HOOKS_DIR`` > ``~/.cline/hooks``."""
        return env_path("PAXM_CLINE_HOOKS_DIR") or env_path("CLINE_HOOKS_DIR") or self.cline_dir() / "hooks"

    def installed_events(self, config: Any) -> list[str]:
        """``session_start`` always; the others when their recall or write is enabled."""
        return enabled_hook_events(config, self.name, EVENTS)

    def commands(self, config: Any) -> dict[str, list[str]]:
        """paxm event -> the hook-client argv the plugin runs."""
        queue = queue_path(config)
        out = {}
        for event in self.installed_events(config):
            waits = event in (EVENT_SESSION_START, EVENT_USER_INPUT)
            out[event] = hook_command(
                config.path, self.name, event, queue_path=queue, timeout=CLIENT_TIMEOUT_S if waits else None
            )
        return out

    def _upstream_hook_files(self) -> list[Path]:
        out = []
        for name in UPSTREAM_HOOK_FILES:
            for path in (self.hooks_dir() / name, self.hooks_dir() / f"{name}.ps1"):
                try:
                    if UPSTREAM_HOOK_MARKER in path.read_text(encoding="utf-8", errors="replace")[:4096]:
                        out.append(path)
                except OSError:
                    continue
        return out

    def _remove_upstream(self, report: Report) -> None:
        for path in self._upstream_hook_files():
            path.unlink(missing_ok=True)
            report(f"removed upstream paxm hook {path}")

    def detect(self) -> str | None:
        """``cline`` on ``PATH``, else ``~/.cline`` if it exists."""
        return detect_harness("cline", self.cline_dir())

    def preflight(self, ctx: InstallContext) -> None:
        """Refuse to overwrite a ``paxm.js`` in the plugins directory that paxm did not write."""
        path = self.plugin_path()
        if path.exists() and not plugin_file().is_paxm(path):
            raise IntegrationError(f"{path} exists and was not written by paxm; move it away, paxm changed nothing")

    def install(self, ctx: InstallContext) -> list[str]:
        """Write (or refresh) the plugin; remove upstream's hook files.  Idempotent."""
        self.preflight(ctx)
        path, report = self.plugin_path(), Report(ctx)
        self._remove_upstream(report)
        changed = plugin_file().write(path, render_plugin(self.commands(ctx.config), target=self.name))
        report(f"installed paxm plugin {path}" if changed else f"paxm plugin {path} is up to date")
        return report

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Delete the plugin paxm wrote (and upstream's hook files); nothing else in ``~/.cline``."""
        path, report = self.plugin_path(), Report(ctx)
        self._remove_upstream(report)
        if plugin_file().is_paxm(path):
            path.unlink(missing_ok=True)
            report(f"removed paxm plugin {path}")
        return report

    def check(self, ctx: InstallContext) -> list[Finding]:
        """The plugin present, current, and every file its commands run exists."""
        path = self.plugin_path()
        fix = setup_fix_command(ctx, self.name)
        findings: list[Finding] = []
        for stale in self._upstream_hook_files():
            findings.append(Finding("warn", f"upstream paxm hook file {stale} (cannot inject context)", fix))
        try:
            source = path.read_text(encoding="utf-8")
        except OSError:
            return [*findings, Finding("error", f"paxm Cline plugin missing: {path}", fix)]
        settings = plugin_file().embedded_settings(source)
        if settings is None:
            return [*findings, Finding("error", f"{path} is not paxm's plugin", f"move it away, then {fix}")]
        if source != render_plugin(self.commands(ctx.config), target=self.name):
            return [*findings, Finding("warn", f"paxm plugin {path} is out of date", fix)]
        commands = settings.get("commands")
        argvs = commands.values() if isinstance(commands, dict) else ()
        findings += missing_file_findings(
            ([str(a) for a in argv] for argv in argvs if isinstance(argv, list)), fix, "paxm plugin"
        )
        return findings or [Finding("ok", f"paxm plugin installed at {path}")]

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """The plugin's payload (paxm's generic field names) -> :class:`HookEvent` (never raises)."""
        native = named_event(native_event, raw)
        event = native if native in EVENTS else _NATIVE.get(native.lower(), native or EVENT_USER_INPUT)
        return decode_generic(raw, self.name, event, native)

    def hook_output(self, result: HookResult, mode: str) -> str:
        """Plain text for session start and prompts (the plugin appends it as context); else nothing."""
        if mode == "json":  # ``paxm __hook --json`` by hand: upstream's capture result
            return super().hook_output(result, mode)
        if result.ignored or result.event not in (EVENT_SESSION_START, EVENT_USER_INPUT):
            return ""
        return result.context
