"""The ``copilot-cli`` integration: paxm's own hook file ``$COPILOT_HOME/hooks/paxm.json``, as data.

Copilot CLI loads every ``*.json`` in its hooks directory: ``{"version": 1, "hooks": {event:
[{"type": "command", "bash": ..., "timeoutSec": ...}]}}``.  paxm keeps its handlers in a file of
its own so the user's hook files are never rewritten (handlers the user put into ``paxm.json``
are kept; the file goes once nothing else is in it).  The core's
:mod:`paxm_core.settings_hooks` engine does install, uninstall and doctor from :data:`SPEC`;
Copilot's own parts are its camelCase payloads and the reply, read from the session's
``events.jsonl``.  Copilot adds the context as given (no escaping), in top-level
``additionalContext`` JSON.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from paxm_core.integration import (
    EVENT_TOOL_FAILURE,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    decode_generic,
    dumps_compact,
    parse_payload,
)
from paxm_core.settings_hooks import HOOK_TIMEOUT_S, Location, SettingsHooksIntegration, SettingsHooksSpec, hook_events
from paxm_integration_copilot_cli.transcript import wait_for_turn

if TYPE_CHECKING:
    from paxm_core.integration import HookEvent

__all__ = ["SPEC", "CopilotCliIntegration"]


SPEC = SettingsHooksSpec(
    name="copilot-cli",
    aliases=("copilot", "copilot_cli", "github-copilot", "github-copilot-cli"),
    display_name="GitHub Copilot CLI",
    setup_priority=47,
    executable="copilot",
    # $PAXM_COPILOT_HOOKS > $COPILOT_HOME/hooks/paxm.json > ~/.copilot/hooks/paxm.json; detect
    # looks for Copilot's home
    location=Location("PAXM_COPILOT_HOOKS", home_var="COPILOT_HOME", home=".copilot", file="hooks/paxm.json"),
    detect_home=True,
    layout="json-handlers",
    version=1,
    what="Copilot CLI hooks file",
    noun="hooks file",
    events=hook_events("sessionStart", "userPromptSubmitted", "postToolUse", "agentStop"),
    handler={"type": "command", "bash": "{command}", "timeoutSec": HOOK_TIMEOUT_S},
    output="additional-context",
)


def _str(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


class CopilotCliIntegration(SettingsHooksIntegration):
    """GitHub Copilot CLI: ``$COPILOT_HOME/hooks/paxm.json``, top-level ``additionalContext`` output."""

    spec = SPEC

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Copilot's camelCase payload -> :class:`HookEvent` (never raises)."""
        payload = parse_payload(raw)
        native = native_event.strip()
        event = self.native_events.event(native)
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
