"""One small :class:`~paxm_core.integration.IntegrationBase` subclass per IDE agent.

Each keeps the generic decoder (these agents send upstream's generic field names) and adds
only its native output mode; every other mode is the generic output.  Install and doctor
checks are not implemented yet (the base class installs nothing).
"""

from __future__ import annotations

from paxm_core.integration import (
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    HookEvent,
    HookResult,
    IntegrationBase,
    decode_generic,
    dumps_compact,
    parse_payload,
)

__all__ = ["ClineIntegration", "CursorIntegration", "KimiIntegration", "ZCodeIntegration"]


class CursorIntegration(IntegrationBase):
    """Cursor: ``--cursor`` prints ``{"continue": true, "additional_context": ...}``."""

    name = "cursor"
    display_name = "Cursor"
    label = "Cursor"
    setup_priority = 40

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Generic fields, plus Cursor's ``afterAgentResponse`` ``text`` as the assistant reply."""
        event = decode_generic(raw, self.name, native_event)
        if event.event == EVENT_TURN_END and not event.assistant:
            text = parse_payload(raw).get("text")
            event.assistant = text.strip() if isinstance(text, str) else ""
        return event

    def hook_output(self, result: HookResult, mode: str) -> str:
        """Cursor ignores context on prompt submission, so only other events carry it."""
        if mode != "cursor":
            return super().hook_output(result, mode)
        if result.ignored:
            return ""
        shown = result.context if result.event != EVENT_USER_INPUT else ""
        return dumps_compact({"continue": True, **({"additional_context": shown} if shown else {})})


class ZCodeIntegration(IntegrationBase):
    """ZCode: ``--zcode`` prints ``{"additionalContext": ...}`` (``{}`` when there is none)."""

    name = "zcode"
    display_name = "ZCode"
    label = "ZCode"
    setup_priority = 80

    def hook_output(self, result: HookResult, mode: str) -> str:
        if mode != "zcode":
            return super().hook_output(result, mode)
        if result.ignored:
            return ""
        return dumps_compact({"additionalContext": result.context} if result.context else {})


class KimiIntegration(IntegrationBase):
    """Kimi Code: plain text; the first prompt carries the session blocks."""

    name = "kimi"
    aliases = ("kimi-code",)
    display_name = "Kimi Code"
    label = "Kimi Code"
    setup_priority = 70

    def hook_output(self, result: HookResult, mode: str) -> str:
        """Kimi ignores SessionStart output, so the session identity/time ride on the first prompt."""
        if mode != "kimi":
            return super().hook_output(result, mode)
        if result.ignored:
            return ""
        return "\n\n".join(p for p in (result.bootstrap_context, result.context) if p)


class ClineIntegration(IntegrationBase):
    """Cline: ``--cline`` prints ``{"cancel": false, "contextModification": ...}``."""

    name = "cline"
    display_name = "Cline"
    label = "Cline"
    setup_priority = 100

    def hook_output(self, result: HookResult, mode: str) -> str:
        if mode != "cline":
            return super().hook_output(result, mode)
        if result.ignored:
            return ""
        context = result.context
        return dumps_compact({"cancel": False, **({"contextModification": context} if context else {})})
