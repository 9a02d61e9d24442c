"""The ``kimi-code`` integration object: config.toml hooks, payload decoding, plain-text output."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    HookFileIntegration,
    HookMessage,
    NativeEvents,
    decode_generic,
    env_path,
    hook_command_line,
    named_event,
    parse_payload,
    queue_path,
    standard_agent_config,
    value_text,
)
from paxm_integration_kimi_code.config_toml import KimiConfig, is_paxm_command, read_config, write_config

if TYPE_CHECKING:
    from paxm_core.integration import HookEvent, HookResult

__all__ = ["HOOK_TIMEOUT_S", "NATIVE_EVENTS", "KimiCodeIntegration"]

#: paxm event -> Kimi Code hook event, in the order they are installed
NATIVE_EVENTS: tuple[tuple[str, str], ...] = (
    (EVENT_SESSION_START, "SessionStart"),
    (EVENT_USER_INPUT, "UserPromptSubmit"),
    (EVENT_TOOL_USE, "PostToolUse"),
    (EVENT_TURN_END, "Stop"),
)
_EVENTS = NativeEvents(NATIVE_EVENTS)
#: Kimi's hook timeout is in seconds (1-600).  The hook client answers within its own 5 s
#: ceiling; the rest covers interpreter start-up on a loaded machine.
HOOK_TIMEOUT_S = 10


class KimiCodeIntegration(HookFileIntegration):
    """Kimi Code: ``[[hooks]]`` in ``$KIMI_CODE_HOME/config.toml``, plain stdout injected as context."""

    name = "kimi-code"
    #: ``kimi`` is upstream's name (an existing ``agents.kimi`` keeps resolving)
    aliases: tuple[str, ...] = ("kimi", "kimi_code", "kimicode", "kimi code")
    display_name = "Kimi Code"
    label = "Kimi Code"
    setup_priority = 50
    native_events = _EVENTS
    executable = "kimi"
    hooks_noun = "config"

    def default_agent_config(self) -> dict[str, Any]:
        """Recall on every prompt; prompt, tool results and reply captured (turn end flushes)."""
        return standard_agent_config(write_events=("session_start", "user_input", "tool_use", "turn_end"))

    # -- where things go ------------------------------------------------------------------------

    def kimi_home(self) -> Path:
        """``$KIMI_CODE_HOME`` > ``~/.kimi-code``."""
        return env_path("KIMI_CODE_HOME") or (Path.home() / ".kimi-code").absolute()

    def config_path(self) -> Path:
        """``$PAXM_KIMI_CONFIG`` > ``$KIMI_CODE_HOME/config.toml`` > ``~/.kimi-code/config.toml``."""
        return env_path("PAXM_KIMI_CONFIG") or self.kimi_home() / "config.toml"

    def hooks_path(self) -> Path:
        return self.config_path()

    def wanted_hooks(self, config: Any) -> list[dict[str, Any]]:
        """The ``[[hooks]]`` tables paxm installs for ``config`` (only keys Kimi accepts)."""
        queue = queue_path(config)
        out = []
        for event in self.installed_events(config):
            native = _EVENTS.native(event)
            command = hook_command_line(config.path, self.name, native, queue_path=queue)
            out.append({"event": native, "command": command, "timeout": HOOK_TIMEOUT_S})
        return out

    def _is_ours(self, config: Any) -> Any:
        targets = (self.name, *self.aliases)
        return lambda command: is_paxm_command(command, config.path, targets)

    # -- HookFileIntegration: config.toml's ``[[hooks]]`` ---------------------------------------

    def read_hooks(self, path: Path) -> tuple[KimiConfig, bool]:
        document = read_config(path)
        return document, document.original is not None

    def update_hooks(self, config: Any, wanted: list[dict[str, Any]] | None) -> bool:
        document = read_config(self.config_path())
        if document.original is None and not wanted:
            return False
        if not document.merge(wanted or [], self._is_ours(config)):
            return False
        write_config(document)
        return True

    def hooks_current(self, data: KimiConfig, wanted: list[dict[str, Any]], config: Any, path: Path) -> bool:
        return data.paxm_hooks(self._is_ours(config)) == wanted and not data.had_upstream_block

    def hook_commands(self, wanted: list[dict[str, Any]]) -> list[str]:
        return [entry["command"] for entry in wanted]

    # -- payloads and output --------------------------------------------------------------------

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Kimi's payload -> :class:`HookEvent` (never raises).

        ``prompt`` is a list of content parts (text joined); ``PostToolUse`` names its result
        ``tool_output``; ``Stop`` has no reply, so the session's ``wire.jsonl`` is read for the
        last finished turn (bounded, tolerant of a missing or partial file).
        """
        obj = parse_payload(raw)
        native = named_event(native_event, obj)
        event_name = _EVENTS.event(native)
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
        path = find_wire(self.kimi_home(), session_id)
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
        """Plain text for prompts: Kimi adds a hook's stdout to the turn as context.

        Kimi ignores ``SessionStart`` output, so a session's identity/time blocks ride on its
        first prompt (``bootstrap_context``).  Nothing is printed for any other event.
        """
        if mode == "json":  # ``paxm __hook --json`` by hand: upstream's capture result
            return super().hook_output(result, mode)
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
