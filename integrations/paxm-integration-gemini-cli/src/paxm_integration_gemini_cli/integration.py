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
    HookFileIntegration,
    NativeEvents,
    decode_generic,
    env_path,
    hook_command_line,
    hook_specific_output,
    named_event,
    parse_payload,
    queue_path,
    standard_agent_config,
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


class GeminiCliIntegration(HookFileIntegration):
    """Gemini CLI: hooks in ``~/.gemini/settings.json``, ``hookSpecificOutput`` JSON output."""

    name = "gemini-cli"
    aliases: tuple[str, ...] = ("gemini", "gemini_cli", "geminicli")
    display_name = "Gemini CLI"
    label = "Gemini CLI"
    setup_priority = 44
    native_events = _EVENTS
    executable = "gemini"
    hooks_noun = "settings"

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

    def hooks_path(self) -> Path:
        return self.settings_path()

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

    # -- HookFileIntegration: settings.json, switches and comments hint included ----------------

    def read_hooks(self, path: Path) -> tuple[dict[str, Any], bool]:
        settings, original = read_settings(path, f"{self.display_name} settings")
        return settings, original is not None

    def update_hooks(self, config: Any, wanted: dict[str, dict[str, Any]] | None) -> bool:
        what = f"{self.display_name} settings"
        return update_hook_groups(
            self.settings_path(), what, wanted or {}, self._is_ours(config), switches=CONFIG_FIELDS, hint=COMMENTS_HINT
        )

    def hooks_current(self, data: dict[str, Any], wanted: dict[str, dict[str, Any]], config: Any, path: Path) -> bool:
        return merge_hooks(data, wanted, self._is_ours(config), where=str(path)) == data

    def hook_commands(self, wanted: dict[str, dict[str, Any]]) -> list[str]:
        return [group["hooks"][0]["command"] for group in wanted.values()]

    def extra_findings(
        self, data: dict[str, Any], wanted: dict[str, dict[str, Any]], path: Path, fix: str
    ) -> list[Finding]:
        """Gemini's own switches that keep installed hooks from running."""
        return self._switched_off(data, wanted, path)

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
