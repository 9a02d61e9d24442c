"""The ``copilot-cli`` integration object: paxm's hook file, payload decoding, JSON hook output."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_FAILURE,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    HookFileIntegration,
    NativeEvents,
    context_for,
    decode_generic,
    dumps_compact,
    env_path,
    hook_command_line,
    parse_payload,
    queue_path,
    standard_agent_config,
)
from paxm_integration_copilot_cli.hooks_file import (
    FILE_NAME,
    is_empty,
    is_paxm_command,
    merge_handlers,
    read_hooks_file,
    write_hooks_file,
)
from paxm_integration_copilot_cli.transcript import wait_for_turn

if TYPE_CHECKING:
    from paxm_core.integration import HookEvent, HookResult

__all__ = ["HOOK_TIMEOUT_SEC", "NATIVE_EVENTS", "CopilotCliIntegration"]

#: paxm event -> Copilot CLI hook event, in the order they are installed
NATIVE_EVENTS: tuple[tuple[str, str], ...] = (
    (EVENT_SESSION_START, "sessionStart"),
    (EVENT_USER_INPUT, "userPromptSubmitted"),
    (EVENT_TOOL_USE, "postToolUse"),
    (EVENT_TURN_END, "agentStop"),
)
_EVENTS = NativeEvents(NATIVE_EVENTS)
#: the events whose ``additionalContext`` Copilot adds to the model's input
_CONTEXT_EVENTS = (EVENT_SESSION_START, EVENT_USER_INPUT)
#: Copilot's hook timeout is in seconds.  The hook client answers within its own 5 s ceiling;
#: the rest covers interpreter start-up on a loaded machine.
HOOK_TIMEOUT_SEC = 10


def _str(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


class CopilotCliIntegration(HookFileIntegration):
    """GitHub Copilot CLI: ``$COPILOT_HOME/hooks/paxm.json``, top-level ``additionalContext`` output."""

    name = "copilot-cli"
    aliases: tuple[str, ...] = ("copilot", "copilot_cli", "github-copilot", "github-copilot-cli")
    display_name = "GitHub Copilot CLI"
    label = "GitHub Copilot CLI"
    setup_priority = 47
    native_events = _EVENTS
    executable = "copilot"

    def default_agent_config(self) -> dict[str, Any]:
        """Recall on every prompt; session start, prompt and reply captured (``agentStop`` flushes)."""
        return standard_agent_config()

    # -- where things go ------------------------------------------------------------------------

    def copilot_home(self) -> Path:
        """``$COPILOT_HOME`` (Copilot CLI's own override), else ``~/.copilot``."""
        return env_path("COPILOT_HOME") or (Path.home() / ".copilot").absolute()

    def hooks_path(self) -> Path:
        """``$PAXM_COPILOT_HOOKS`` > ``<copilot home>/hooks/paxm.json``."""
        return env_path("PAXM_COPILOT_HOOKS") or self.copilot_home() / "hooks" / FILE_NAME

    def detect_dir(self) -> Path:
        """Copilot's home directory (detect: ``copilot`` on ``PATH``, else this if it exists)."""
        return self.copilot_home()

    def wanted_hooks(self, config: Any) -> dict[str, dict[str, Any]]:
        """Native event -> the handler paxm installs for ``config``."""
        queue = queue_path(config)
        wanted: dict[str, dict[str, Any]] = {}
        for event in self.installed_events(config):
            native = _EVENTS.native(event)
            command = hook_command_line(config.path, self.name, native, queue_path=queue)
            wanted[native] = {"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT_SEC}
        return wanted

    def _is_ours(self, config: Any) -> Any:
        return lambda command: is_paxm_command(command, config.path, self.name)

    # -- HookFileIntegration: paxm.json (the file goes when nothing else is left in it) ------------

    def read_hooks(self, path: Path) -> tuple[dict[str, Any], bool]:
        return read_hooks_file(path)

    def update_hooks(self, config: Any, wanted: dict[str, dict[str, Any]] | None) -> bool:
        path = self.hooks_path()
        data, exists = read_hooks_file(path)
        updated = merge_handlers(data, wanted or {}, self._is_ours(config), where=str(path))
        if is_empty(updated):
            if exists:
                path.unlink()
                return True
            return False
        if exists and updated == data:
            return False
        write_hooks_file(path, updated)
        return True

    def hooks_current(self, data: dict[str, Any], wanted: dict[str, dict[str, Any]], config: Any, path: Path) -> bool:
        return merge_handlers(data, wanted, self._is_ours(config), where=str(path)) == data

    def hook_commands(self, wanted: dict[str, dict[str, Any]]) -> list[str]:
        return [handler["bash"] for handler in wanted.values()]

    # -- payloads and output --------------------------------------------------------------------

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Copilot's camelCase payload -> :class:`HookEvent` (never raises).

        ``sessionId``, ``cwd``, ``prompt`` (userPromptSubmitted), ``toolName``/``toolArgs``/
        ``toolResult.textResultForLlm`` (postToolUse; ``resultType`` other than ``success`` is
        a tool failure), ``transcriptPath`` (agentStop: the reply is read from that
        ``events.jsonl``).
        """
        payload = parse_payload(raw)
        native = native_event.strip()
        event = _EVENTS.event(native)
        generic: dict[str, Any] = {}
        for theirs, ours in (("sessionId", "session_id"), ("cwd", "cwd"), ("transcriptPath", "transcript_path")):
            if _str(payload, theirs):
                generic[ours] = _str(payload, theirs)
        if _str(payload, "source"):
            generic["source"] = _str(payload, "source")
        if event == EVENT_USER_INPUT:
            generic["prompt"] = _str(payload, "prompt")
        if event in (EVENT_TOOL_USE, EVENT_TOOL_FAILURE):
            result = payload.get("toolResult")
            result = result if isinstance(result, dict) else {}
            generic["tool_name"] = _str(payload, "toolName")
            generic["tool_input"] = payload.get("toolArgs")
            kind = _str(result, "resultType")
            if kind and kind != "success":
                event = EVENT_TOOL_FAILURE
                generic["error"] = _str(result, "textResultForLlm") or kind
            else:
                generic["tool_response"] = _str(result, "textResultForLlm")
        hook = decode_generic(dumps_compact(generic), self.name, event, native)
        hook.raw = raw.decode("utf-8", errors="replace").strip() if isinstance(raw, bytes) else str(raw)
        if event == EVENT_TURN_END:
            hook.assistant = wait_for_turn(_str(payload, "transcriptPath")).reply
        return hook

    def hook_output(self, result: HookResult, mode: str) -> str:
        """Top-level ``{"additionalContext": ...}`` JSON for session start and prompts; else nothing.

        Copilot adds the text as given (no escaping), so paxm's envelope reaches the model as is.
        """
        context = context_for(result, _CONTEXT_EVENTS)
        return dumps_compact({"additionalContext": context}) if context else ""
