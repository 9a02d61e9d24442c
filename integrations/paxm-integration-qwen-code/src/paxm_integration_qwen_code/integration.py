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
    HookFileIntegration,
    NativeEvents,
    decode_generic,
    env_path,
    guard_escaped_envelope,
    hook_command_line,
    hook_specific_output,
    named_event,
    queue_path,
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


class QwenCodeIntegration(HookFileIntegration):
    """Qwen Code: Claude-shaped hooks in ``~/.qwen/settings.json``, ``hookSpecificOutput`` JSON output."""

    name = "qwen"
    aliases: tuple[str, ...] = ("qwen-code", "qwen_code", "qwencode")
    display_name = "Qwen Code"
    label = "Qwen Code"
    setup_priority = 45
    native_events = _EVENTS
    executable = "qwen"
    hooks_noun = "settings"

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

    def hooks_path(self) -> Path:
        return self.settings_path()

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

    # -- HookFileIntegration: settings.json ----------------------------------------------------

    def read_hooks(self, path: Path) -> tuple[dict[str, Any], bool]:
        settings, original = read_settings(path, f"{self.display_name} settings")
        return settings, original is not None

    def update_hooks(self, config: Any, wanted: dict[str, dict[str, Any]] | None) -> bool:
        what = f"{self.display_name} settings"
        return update_hook_groups(self.settings_path(), what, wanted or {}, self._is_ours(config))

    def hooks_current(self, data: dict[str, Any], wanted: dict[str, dict[str, Any]], config: Any, path: Path) -> bool:
        return merge_hooks(data, wanted, self._is_ours(config), where=str(path)) == data

    def hook_commands(self, wanted: dict[str, dict[str, Any]]) -> list[str]:
        """Every installed command: doctor checks each file it runs (the client too, not only
        the interpreter, so a deleted hook client is reported)."""
        return [hook["command"] for group in wanted.values() for hook in group["hooks"]]

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
