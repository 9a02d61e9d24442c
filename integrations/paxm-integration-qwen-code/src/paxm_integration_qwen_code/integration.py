"""The ``qwen`` integration object: settings.json hooks, payload decoding, JSON hook output."""

from __future__ import annotations

import copy
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
    guard_escaped_envelope,
    hook_command_line,
    hook_specific_output,
    install_report,
    named_event,
    queue_path,
    setup_fix_command,
    uninstall_report,
)
from paxm_core.json_settings import update_hook_groups
from paxm_integration_qwen_code.settings import is_paxm_command, merge_hooks, read_settings

if TYPE_CHECKING:
    from paxm_core.integration import HookEvent, HookResult

__all__ = ["DEFAULT_AGENT_CONFIG", "HOOK_TIMEOUT_MS", "NATIVE_EVENTS", "QwenCodeIntegration", "guard_escaped_envelope"]

#: paxm event -> Qwen Code hook event, in the order they are installed
NATIVE_EVENTS: tuple[tuple[str, str], ...] = (
    (EVENT_SESSION_START, "SessionStart"),
    (EVENT_USER_INPUT, "UserPromptSubmit"),
    (EVENT_TOOL_USE, "PostToolUse"),
    (EVENT_TURN_END, "Stop"),
)
_EVENTS = NativeEvents(NATIVE_EVENTS)
#: Qwen Code's hook timeout is in milliseconds.  The hook client answers within its own 5 s
#: ceiling; the rest covers interpreter start-up on a loaded machine.
HOOK_TIMEOUT_MS = 10_000

# ``guard_escaped_envelope`` (paxm_core.integration's; re-exported here) keeps an escaped tag forged
# inside recalled content distinguishable from the real tags: Qwen HTML-escapes the whole
# injected text, so the real tags reach the model as ``&lt;paxm-recall ...&gt;``.


def _write(mode: str, *, flush: bool = False) -> dict[str, Any]:
    buffer: dict[str, Any] = {"enabled": True, "flush_count": 10, **({"flush": True} if flush else {})}
    return {"enabled": True, "profile": "ltm", "template": "{{ .safe_text }}", "mode": mode, "buffer": buffer}


#: ``agents.qwen``: recall on every prompt, and the prompt and the reply captured.  Qwen's Stop
#: payload carries the reply (``last_assistant_message``) but not the prompt, so the prompt is
#: written at ``UserPromptSubmit`` and the turn end flushes both into one episode.
DEFAULT_AGENT_CONFIG: dict[str, Any] = {
    "enabled": False,
    "active_recall": {"enabled": True, "profile": "default", "output": "markdown"},
    "hooks": {
        "session_start": {"write": _write("session_start")},
        "user_input": {
            "recall": {
                "enabled": True,
                "profile": "passive",
                "query_template": "{{ .prompt }}",
                "max_results": 2,
                "timeout_extra": "100ms",
                "output": "markdown",
                "insertion": {"min_score": 0.8, "max_items": 2, "require_query_terms": True},
                "initial": {
                    "enabled": True,
                    "profile": "passive_initial",
                    "max_results": 5,
                    "insertion": {"min_score": 0.35, "max_items": 5},
                },
            },
            "write": _write("user_input"),
        },
        "turn_end": {"write": _write("turn_end", flush=True)},
    },
}


class QwenCodeIntegration(IntegrationBase):
    """Qwen Code: Claude-shaped hooks in ``~/.qwen/settings.json``, ``hookSpecificOutput`` JSON output."""

    name = "qwen"
    aliases: tuple[str, ...] = ("qwen-code", "qwen_code", "qwencode")
    display_name = "Qwen Code"
    label = "Qwen Code"
    setup_priority = 45

    def default_agent_config(self) -> dict[str, Any]:
        """:data:`DEFAULT_AGENT_CONFIG` (a copy)."""
        return copy.deepcopy(DEFAULT_AGENT_CONFIG)

    # -- where things go ------------------------------------------------------------------------

    def settings_path(self) -> Path:
        """``$PAXM_QWEN_SETTINGS`` > ``$QWEN_HOME/settings.json`` > ``~/.qwen/settings.json``."""
        return (
            env_path("PAXM_QWEN_SETTINGS")
            or ((env_path("QWEN_HOME") or Path.home() / ".qwen") / "settings.json").absolute()
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
            group: dict[str, Any] = {"matcher": ".*"} if native == "PostToolUse" else {}
            group["hooks"] = [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_MS}]
            wanted[native] = group
        return wanted

    def _is_ours(self, config: Any) -> Any:
        return lambda command: is_paxm_command(command, config.path, self.name)

    def _update(self, config: Any, wanted: dict[str, dict[str, Any]]) -> bool:
        what = f"{self.display_name} settings"
        return update_hook_groups(self.settings_path(), what, wanted, self._is_ours(config))

    # -- Integration contract -------------------------------------------------------------------

    def detect(self) -> str | None:
        """``qwen`` on ``PATH``, else the settings dir if it exists."""
        return detect_harness("qwen", self.settings_path().parent)

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
        """Every wanted handler present in settings.json, and the files it runs exist."""
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
        findings = []
        for group in wanted.values():
            argv = group["hooks"][0]["command"]
            for word in argv.split()[:1]:
                if not Path(word.strip("'\"")).exists():
                    findings.append(Finding("error", f"paxm hook points at a missing file: {word}", fix))
        return findings or [Finding("ok", f"paxm hooks installed in {path}")]

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Qwen's Claude-shaped payload -> :class:`HookEvent` (never raises).

        ``prompt``, ``last_assistant_message`` (Stop), ``tool_name``/``tool_input``/
        ``tool_response``, ``session_id``, ``cwd``, ``transcript_path``: the generic decoder's
        names.  Without an event on the command line the payload's ``hook_event_name`` decides.
        """
        native = named_event(native_event, raw)
        return decode_generic(raw, self.name, _EVENTS.event(native.strip()), native)

    def hook_output(self, result: HookResult, mode: str) -> str:
        """``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}`` for session start and prompts.

        Qwen ignores plain text on stdout; every other event prints nothing (a Stop hook never
        prints a ``decision``, so paxm cannot keep Qwen from stopping).
        """
        return hook_specific_output(result, _EVENTS)
