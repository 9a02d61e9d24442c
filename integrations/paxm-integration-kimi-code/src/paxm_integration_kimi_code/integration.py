"""The ``kimi-code`` integration: ``[[hooks]]`` tables in Kimi Code's ``config.toml``, as data.

The core's :mod:`paxm_core.settings_hooks` engine does install, uninstall and doctor from
:data:`SPEC` (tomlkit keeps the user's comments, key order and formatting).  Kimi refuses a
config whose hook tables carry any key besides ``event``/``matcher``/``command``/``timeout``, so
paxm marks nothing and adds no key of its own.  Upstream (the Go paxm) wrote its hooks as a
text block between two marker comments; that block is removed whenever paxm rewrites the file.
Kimi's own parts: its prompt is a list of content parts, tool output is ``tool_output``, the
Stop payload has no reply (the session's ``wire.jsonl`` is read), and plain stdout is context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from paxm_core.integration import (
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    HookMessage,
    IntegrationBase,
    decode_generic,
    named_event,
    parse_payload,
    value_text,
)
from paxm_core.settings_hooks import HOOK_TIMEOUT_S, Location, SettingsHooksIntegration, SettingsHooksSpec, hook_events

if TYPE_CHECKING:
    from paxm_core.integration import HookEvent, HookResult

__all__ = ["SPEC", "UPSTREAM_BEGIN", "UPSTREAM_END", "KimiCodeIntegration"]

UPSTREAM_BEGIN = "# >>> paxm managed kimi hooks >>>"
UPSTREAM_END = "# <<< paxm managed kimi hooks <<<"

SPEC = SettingsHooksSpec(
    name="kimi-code",
    #: ``kimi`` is upstream's name (an existing ``agents.kimi`` keeps resolving, and its hooks are paxm's)
    aliases=("kimi", "kimi_code", "kimicode", "kimi code"),
    match_aliases=True,
    display_name="Kimi Code",
    setup_priority=50,
    executable="kimi",
    # $PAXM_KIMI_CONFIG > $KIMI_CODE_HOME/config.toml > ~/.kimi-code/config.toml
    location=Location("PAXM_KIMI_CONFIG", home_var="KIMI_CODE_HOME", home=".kimi-code", file="config.toml"),
    layout="toml-tables",
    legacy_block=(UPSTREAM_BEGIN, UPSTREAM_END),
    what="Kimi Code config",
    noun="config",
    events=hook_events("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"),
    handler={"event": "{native}", "command": "{command}", "timeout": HOOK_TIMEOUT_S},
    output="text",
    write_events=("session_start", "user_input", "tool_use", "turn_end"),
)


class KimiCodeIntegration(SettingsHooksIntegration):
    """Kimi Code: ``[[hooks]]`` in ``$KIMI_CODE_HOME/config.toml``, plain stdout injected as context."""

    spec = SPEC

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Kimi's payload -> :class:`HookEvent` (never raises)."""
        obj = parse_payload(raw)
        native = named_event(native_event, obj)
        event_name = self.native_events.event(native)
        event = decode_generic(raw, self.name, event_name, native)
        if event_name == EVENT_USER_INPUT and not event.prompt:
            event.prompt = _parts_text(obj.get("prompt"))
        elif event_name == EVENT_TOOL_USE:
            event.messages = _tool_messages(obj) or event.messages
        elif event_name == EVENT_TURN_END and not event.assistant:
            self._read_turn(event, obj)
        return event

    def _read_turn(self, event: HookEvent, obj: dict[str, Any]) -> None:
        from paxm_integration_kimi_code.wire import find_wire, wait_for_turn

        session_id = obj.get("session_id")
        if not isinstance(session_id, str):
            return
        path = find_wire(self.spec.location.home_dir(), session_id)  # $KIMI_CODE_HOME > ~/.kimi-code
        if path is None:
            return
        turn = wait_for_turn(path)
        event.assistant = turn.assistant
        if turn.prompt and not event.prompt:
            event.prompt = turn.prompt
        messages = [HookMessage("user", turn.prompt)] if turn.prompt else []
        messages.extend(HookMessage("assistant", text) for text in turn.replies)
        event.messages = messages
        event.metadata.setdefault("transcript_path", str(path))

    def hook_output(self, result: HookResult, mode: str) -> str:
        """Plain text for prompts: Kimi adds a hook's stdout to the turn as context."""
        if mode == "json":  # ``paxm __hook --json`` by hand: upstream's capture result
            return IntegrationBase.hook_output(self, result, mode)
        if result.ignored or result.event != EVENT_USER_INPUT:
            return ""
        return "\n\n".join(p for p in (result.bootstrap_context, result.context) if p.strip())


def _parts_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return ""
    texts = [p.get("text") for p in value if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(t for t in texts if isinstance(t, str) and t.strip())


def _tool_messages(obj: dict[str, Any]) -> list[HookMessage]:
    name = obj.get("tool_name")
    call = " ".join(p for p in (name if isinstance(name, str) else "", value_text(obj.get("tool_input"))) if p)
    output = value_text(obj.get("tool_output"))
    out = [HookMessage("tool_call", call.strip())] if call.strip() else []
    if output.strip():
        out.append(HookMessage("tool_result", output))
    return out
