"""The seam between harness integrations and the passive runtime.

A harness plugin registers (through ``paxm_register_integrations``) an object with ``name``
and ``aliases`` and, to take part in hooks, two methods:

``decode(native_event, raw) -> HookEvent``
    turn the harness's payload for its native event (``UserPromptSubmit`` ...) into a
    normalized event; ``native_event`` is whatever the installed hook command passed as
    ``--event``.  Must not raise for bad input (return an event with empty fields).

``render(result, mode) -> str``
    the exact stdout the harness expects for ``result`` (``""`` prints nothing).

Targets without a plugin use :class:`GenericIntegration`, which decodes upstream's field
names (the documented generic payload) and renders plain text, the ``--json`` capture result,
or Codex's ``hookSpecificOutput`` for ``codex``.
"""

from __future__ import annotations

import json
from typing import Any, Protocol, runtime_checkable

from paxm_core.hooks.decode import decode_generic
from paxm_core.hooks.events import EVENT_SESSION_START, EVENT_USER_INPUT, HookEvent, HookResult

__all__ = ["GenericIntegration", "HookIntegration", "OUTPUT_MODES", "resolve_integration"]

OUTPUT_MODES = ("text", "json", "cline", "cursor", "zcode", "kimi")

_CODEX_NATIVE = {EVENT_USER_INPUT: "UserPromptSubmit", EVENT_SESSION_START: "SessionStart"}


@runtime_checkable
class HookIntegration(Protocol):
    """What a harness plugin implements to translate hook payloads in and results out."""

    @property
    def name(self) -> str:
        """Canonical target name (the ``agents.<name>`` config key)."""
        ...

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Normalize the native payload ``raw`` sent for ``native_event``."""
        ...

    def render(self, result: HookResult, mode: str) -> str:
        """The stdout text for ``result`` in output ``mode`` (``text`` unless the hook says otherwise)."""
        ...


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class GenericIntegration:
    """Decoder and renderer for targets without a plugin (and the reference implementation)."""

    aliases: tuple[str, ...] = ()

    def __init__(self, name: str = "codex") -> None:
        self._name = name

    @property
    def name(self) -> str:
        """The target this instance serves."""
        return self._name

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Decode ``raw`` with upstream's field names; ``native_event`` is the normalized name."""
        return decode_generic(raw, self._name, native_event)

    def render(self, result: HookResult, mode: str) -> str:
        """Upstream's output modes."""
        if result.ignored:
            return ""
        context = result.context
        if mode == "kimi" and result.bootstrap_context:
            # Kimi ignores SessionStart output: the first prompt carries the session blocks
            context = "\n\n".join(p for p in (result.bootstrap_context, context) if p)
        if mode == "cline":
            return _dumps({"cancel": False, **({"contextModification": context} if context else {})})
        if mode == "cursor":
            shown = context if result.event != EVENT_USER_INPUT else ""
            return _dumps({"continue": True, **({"additional_context": shown} if shown else {})})
        if mode == "zcode":
            return _dumps({"additionalContext": context}) if context else _dumps({})
        if mode == "json":
            native = _CODEX_NATIVE.get(result.event)
            if self._name == "codex" and native:
                if not context:
                    return ""
                return _dumps({"hookSpecificOutput": {"hookEventName": native, "additionalContext": context}})
            return _dumps(result.to_json())
        # text (Claude-style): the context itself; upstream prints "No memories found." when
        # recall ran and nothing survived, which only costs the model tokens, so we print nothing.
        return context


def resolve_integration(target: str, plugin_manager: Any = None) -> Any:
    """The registered integration for ``target`` if it implements ``decode``/``render``, else generic."""
    if plugin_manager is not None:
        try:
            found = plugin_manager.integration(target)
        except Exception:  # a broken plugin must not break the hook
            found = None
        if found is not None and callable(getattr(found, "decode", None)) and callable(getattr(found, "render", None)):
            return found
    return GenericIntegration(target or "codex")
