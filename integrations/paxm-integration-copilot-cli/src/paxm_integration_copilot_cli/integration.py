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
    Finding,
    InstallContext,
    IntegrationBase,
    NativeEvents,
    context_for,
    decode_generic,
    detect_harness,
    dumps_compact,
    enabled_hook_events,
    env_path,
    hook_command_line,
    install_report,
    missing_file_findings,
    parse_payload,
    queue_path,
    setup_fix_command,
    standard_agent_config,
    uninstall_report,
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


class CopilotCliIntegration(IntegrationBase):
    """GitHub Copilot CLI: ``$COPILOT_HOME/hooks/paxm.json``, top-level ``additionalContext`` output."""

    name = "copilot-cli"
    aliases: tuple[str, ...] = ("copilot", "copilot_cli", "github-copilot", "github-copilot-cli")
    display_name = "GitHub Copilot CLI"
    label = "GitHub Copilot CLI"
    setup_priority = 47

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

    def installed_events(self, config: Any) -> list[str]:
        """``session_start`` always; the others when their recall or write is enabled."""
        return enabled_hook_events(config, self.name, _EVENTS.events)

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

    def _update(self, config: Any, wanted: dict[str, dict[str, Any]]) -> bool:
        path = self.hooks_path()
        data, exists = read_hooks_file(path)
        updated = merge_handlers(data, wanted, self._is_ours(config), where=str(path))
        if is_empty(updated):
            if exists:
                path.unlink()
                return True
            return False
        if exists and updated == data:
            return False
        write_hooks_file(path, updated)
        return True

    # -- Integration contract -------------------------------------------------------------------

    def detect(self) -> str | None:
        """``copilot`` on ``PATH``, else Copilot's home directory if it exists."""
        return detect_harness("copilot", self.copilot_home())

    def preflight(self, ctx: InstallContext) -> None:
        """Refuse (before setup saves anything) a ``paxm.json`` paxm could not merge."""
        read_hooks_file(self.hooks_path())

    def install(self, ctx: InstallContext) -> list[str]:
        """Write paxm's handlers into its hook file (idempotent); returns the reported lines."""
        return install_report(ctx, self.hooks_path(), self._update(ctx.config, self.wanted_hooks(ctx.config)))

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Take exactly paxm's handlers out (the file goes when nothing else is left in it)."""
        return uninstall_report(ctx, self.hooks_path(), self._update(ctx.config, {}))

    def check(self, ctx: InstallContext) -> list[Finding]:
        """Every wanted handler present, and the files it runs exist."""
        path = self.hooks_path()
        fix = setup_fix_command(ctx, self.name)
        try:
            data, exists = read_hooks_file(path)
        except Exception as exc:
            return [Finding("error", str(exc), f"fix {path}, then {fix}")]
        if not exists:
            return [Finding("error", f"{self.display_name} hooks file missing: {path}", fix)]
        wanted = self.wanted_hooks(ctx.config)
        if merge_handlers(data, wanted, self._is_ours(ctx.config), where=str(path)) != data:
            return [Finding("warn", f"paxm hooks in {path} are missing or out of date", fix)]
        findings = missing_file_findings((handler["bash"] for handler in wanted.values()), fix)
        return findings or [Finding("ok", f"paxm hooks installed in {path}")]

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
