"""The ``gemini-cli`` integration object: settings.json hooks, payload decoding, JSON hook output."""

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
    NativeEvents,
    decode_generic,
    detect_harness,
    enabled_hook_events,
    env_path,
    hook_command_line,
    hook_specific_output,
    install_report,
    missing_file_findings,
    named_event,
    parse_payload,
    queue_path,
    setup_fix_command,
    standard_agent_config,
    uninstall_report,
)
from paxm_core.json_settings import update_hook_groups
from paxm_integration_gemini_cli.settings import (
    COMMENTS_HINT,
    CONFIG_FIELDS,
    is_paxm_command,
    merge_hooks,
    read_settings,
)

if TYPE_CHECKING:
    from paxm_core.integration import HookEvent, HookResult

__all__ = ["HOOK_TIMEOUT_MS", "NATIVE_EVENTS", "GeminiCliIntegration"]

#: paxm event -> Gemini CLI hook event, in the order they are installed
NATIVE_EVENTS: tuple[tuple[str, str], ...] = (
    (EVENT_SESSION_START, "SessionStart"),
    (EVENT_USER_INPUT, "BeforeAgent"),
    (EVENT_TOOL_USE, "AfterTool"),
    (EVENT_TURN_END, "AfterAgent"),
)
_EVENTS = NativeEvents(NATIVE_EVENTS)
#: Gemini's hook timeout is in milliseconds (its default is 60 s).  The hook client answers
#: within its own 5 s ceiling; the rest covers interpreter start-up on a loaded machine.
HOOK_TIMEOUT_MS = 10_000


class GeminiCliIntegration(IntegrationBase):
    """Gemini CLI: hooks in ``~/.gemini/settings.json``, ``hookSpecificOutput`` JSON output."""

    name = "gemini-cli"
    aliases: tuple[str, ...] = ("gemini", "gemini_cli", "geminicli")
    display_name = "Gemini CLI"
    label = "Gemini CLI"
    setup_priority = 44

    def default_agent_config(self) -> dict[str, Any]:
        """Recall on every prompt; session start, prompt and reply captured (``AfterAgent`` flushes).

        ``AfterAgent`` carries the reply (``prompt_response``); the prompt is written at
        ``BeforeAgent``, so the turn's episode holds both.
        """
        return standard_agent_config()

    # -- where things go ------------------------------------------------------------------------

    def settings_path(self) -> Path:
        """``$PAXM_GEMINI_SETTINGS`` > ``$GEMINI_CLI_HOME/.gemini/settings.json`` > ``~/.gemini/settings.json``.

        ``GEMINI_CLI_HOME`` is Gemini CLI's own override of the home directory it keeps
        ``.gemini`` in.
        """
        return (
            env_path("PAXM_GEMINI_SETTINGS")
            or ((env_path("GEMINI_CLI_HOME") or Path.home()) / ".gemini" / "settings.json").absolute()
        )

    def installed_events(self, config: Any) -> list[str]:
        """``session_start`` always; the others when their recall or write is enabled."""
        return enabled_hook_events(config, self.name, _EVENTS.events)

    def wanted_hooks(self, config: Any) -> dict[str, dict[str, Any]]:
        """Native event -> the settings group paxm installs for ``config``."""
        queue = queue_path(config)
        wanted: dict[str, dict[str, Any]] = {}
        for event in self.installed_events(config):
            native = _EVENTS.native(event)
            command = hook_command_line(config.path, self.name, native, queue_path=queue)
            handler = {"type": "command", "name": f"paxm-{native}", "command": command, "timeout": HOOK_TIMEOUT_MS}
            group: dict[str, Any] = {"matcher": ".*"} if native == "AfterTool" else {}
            group["hooks"] = [handler]
            wanted[native] = group
        return wanted

    def _is_ours(self, config: Any) -> Any:
        return lambda command: is_paxm_command(command, config.path, self.name)

    def _update(self, config: Any, wanted: dict[str, dict[str, Any]]) -> bool:
        what = f"{self.display_name} settings"
        return update_hook_groups(
            self.settings_path(), what, wanted, self._is_ours(config), switches=CONFIG_FIELDS, hint=COMMENTS_HINT
        )

    # -- Integration contract -------------------------------------------------------------------

    def detect(self) -> str | None:
        """``gemini`` on ``PATH``, else the ``.gemini`` directory if it exists."""
        return detect_harness("gemini", self.settings_path().parent)

    def preflight(self, ctx: InstallContext) -> None:
        """Refuse (before setup saves anything) a settings file paxm could not merge."""
        read_settings(self.settings_path(), f"{self.display_name} settings")

    def install(self, ctx: InstallContext) -> list[str]:
        """Merge paxm's handlers into settings.json (idempotent); returns the reported lines."""
        return install_report(ctx, self.settings_path(), self._update(ctx.config, self.wanted_hooks(ctx.config)))

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Take exactly paxm's handlers out of settings.json; everything else stays as it was."""
        return uninstall_report(ctx, self.settings_path(), self._update(ctx.config, {}))

    def check(self, ctx: InstallContext) -> list[Finding]:
        """Every wanted handler present and switched on, and the files it runs exist."""
        path = self.settings_path()
        fix = setup_fix_command(ctx, self.name)
        try:
            settings, original = read_settings(path, f"{self.display_name} settings")
        except Exception as exc:
            return [Finding("error", str(exc), f"fix {path}, then {fix}")]
        if original is None:
            return [Finding("error", f"{self.display_name} settings missing: {path}", fix)]
        wanted = self.wanted_hooks(ctx.config)
        if merge_hooks(settings, wanted, self._is_ours(ctx.config), where=str(path)) != settings:
            return [Finding("warn", f"paxm hooks in {path} are missing or out of date", fix)]
        findings = self._switched_off(settings, wanted, path)
        findings += missing_file_findings((group["hooks"][0]["command"] for group in wanted.values()), fix)
        return findings or [Finding("ok", f"paxm hooks installed in {path}")]

    @staticmethod
    def _switched_off(settings: dict[str, Any], wanted: dict[str, dict[str, Any]], path: Path) -> list[Finding]:
        """Gemini's own switches that keep installed hooks from running (``hooksConfig``)."""
        findings: list[Finding] = []
        for key in ("hooksConfig", "hooks"):
            switches = settings.get(key)
            if not isinstance(switches, dict):
                continue
            if switches.get("enabled") is False:
                findings.append(Finding("warn", f"{key}.enabled is false in {path}: Gemini runs no hooks", ""))
            disabled = switches.get("disabled")
            names = {str(group["hooks"][0]["name"]) for group in wanted.values()}
            for name in sorted(names & set(disabled if isinstance(disabled, list) else [])):
                findings.append(Finding("warn", f"{key}.disabled turns off paxm's hook {name} in {path}", ""))
        return findings

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Gemini's payload -> :class:`HookEvent` (never raises).

        ``prompt`` (BeforeAgent), ``prompt_response`` (AfterAgent: the reply),
        ``tool_name``/``tool_input``/``tool_response`` (AfterTool), ``session_id``, ``cwd``,
        ``transcript_path``.  Without an event on the command line the payload's
        ``hook_event_name`` decides.
        """
        payload = parse_payload(raw)
        native = named_event(native_event, payload)
        event = _EVENTS.event(native)
        hook = decode_generic(raw, self.name, event, native)
        reply = payload.get("prompt_response")
        if event == EVENT_TURN_END and isinstance(reply, str) and reply.strip():
            hook.assistant = reply.strip()
        return hook

    def hook_output(self, result: HookResult, mode: str) -> str:
        """``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}`` for session start and prompts.

        Gemini ignores plain text on stdout and reads JSON only; every other event prints
        nothing (never a ``decision``, so paxm cannot keep Gemini from finishing a turn).  Gemini
        HTML-escapes the context, so an escaped tag forged inside it is escaped once more
        (:func:`paxm_core.integration.guard_escaped_envelope`).
        """
        return hook_specific_output(result, _EVENTS)
