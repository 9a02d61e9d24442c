"""Normalized hook events and results: the data that flows through the passive runtime.

A harness integration turns a native payload into a :class:`HookEvent`; the passive runtime
turns that into a :class:`HookResult`; the integration renders the result as the text the
harness reads on stdout.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from paxm_core.api.json import JSONObject
from paxm_core.api.values import value_dataclass

__all__ = [
    "EVENT_PRE_TOOL",
    "EVENT_SESSION_START",
    "EVENT_TOOL_FAILURE",
    "EVENT_TOOL_USE",
    "EVENT_TURN_END",
    "EVENT_USER_INPUT",
    "RECALL_PHASE_INITIAL",
    "RECALL_PHASE_KEY",
    "STANDARD_EVENTS",
    "HookEvent",
    "HookMessage",
    "HookResult",
]

EVENT_SESSION_START = "session_start"
EVENT_USER_INPUT = "user_input"
EVENT_TOOL_USE = "tool_use"
EVENT_TOOL_FAILURE = "tool_failure"
EVENT_TURN_END = "turn_end"
#: before a tool runs (Claude Code / Codex ``PreToolUse``): a context event of its own, where a
#: memory anchored to the file or command is injected (paxm_core.passive.point_of_action)
EVENT_PRE_TOOL = "pre_tool"
STANDARD_EVENTS = (EVENT_SESSION_START, EVENT_USER_INPUT, EVENT_TOOL_USE, EVENT_TOOL_FAILURE, EVENT_TURN_END)

#: metadata key set on the first ``user_input`` of a session (upstream's name, so stored rows match)
RECALL_PHASE_KEY = "paxm_recall_phase"
RECALL_PHASE_INITIAL = "initial"


@value_dataclass(frozen=True, slots=True)
class HookMessage:
    """One visible conversation message: role ``user``/``assistant``/``tool_call``/``tool_result``."""

    role: str
    text: str
    source: str = ""

    def to_json(self) -> dict[str, str]:
        """JSON form used by templates (``{{ .messages }}``) and the generic payload."""
        out = {"role": self.role, "text": self.text}
        if self.source:
            out["source"] = self.source
        return out


@value_dataclass(slots=True, compiled_init=True)
class HookEvent:
    """A harness event in paxm's normalized form.

    :param target: the agent name (``claude``, ``codex``, ...), also the config key under ``agents``.
    :param event: a normalized event name (``user_input`` ...) or a custom, write-only name.
    :param native_event: the harness's own name for the event (``UserPromptSubmit``), if known.
    :param query: an explicit recall query; empty means render ``query_template`` or use the prompt.
    :param prompt: the user's text for ``user_input`` (or the text of a custom event).
    :param assistant: the final visible assistant text (``turn_end``).
    :param messages: visible messages; hidden reasoning is never present here.
    :param workspace: the caller's workspace (payload ``cwd`` ...), passed to recall as trusted context.
    :param metadata: string metadata copied onto writes (``session_id``, ``transcript_path`` ...).
    :param limit: explicit recall limit (0 = profile default).
    :param raw: the native payload text as received (for ``{{ .raw_json }}``).
    :param event_id: idempotency key assigned by the hook client (``evt_<32 hex>``).
    :param captured_at: epoch seconds at which the hook client received the event.
    """

    target: str
    event: str
    native_event: str = ""
    query: str = ""
    prompt: str = ""
    assistant: str = ""
    messages: list[HookMessage] = field(default_factory=list)
    workspace: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    limit: int = 0
    raw: str = ""
    event_id: str = ""
    captured_at: float = 0.0


@value_dataclass(slots=True, compiled_init=True)
class HookResult:
    """What the passive runtime decided for one event; integrations render it.

    ``context`` is the complete text to inject (identity/local-time blocks and the escaped
    ``<paxm-recall mode="passive">`` envelope), already joined; empty means inject nothing.
    """

    target: str
    event: str
    ignored: bool = False
    skipped: bool = False
    query: str = ""
    recall: Any = None
    hits: list[Any] = field(default_factory=list)
    recall_ran: bool = False
    timed_out: bool = False
    session_context: str = ""
    local_time_context: str = ""
    recall_context: str = ""
    buffered: bool = False
    event_id: str = ""
    errors: list[str] = field(default_factory=list)
    initial: bool = False
    #: identity + local-time blocks for a session's first input, for harnesses that ignore
    #: session-start output (an integration may put them on the first prompt); not part of :attr:`context`
    bootstrap_context: str = ""

    @property
    def context(self) -> str:
        """All context blocks, in the order the model should read them."""
        parts = [p for p in (self.session_context, self.local_time_context, self.recall_context) if p.strip()]
        return "\n\n".join(parts)

    def to_json(self) -> JSONObject:
        """Upstream's ``__hook --json`` shape: ``{target, event, query?, skipped?, recall?, additional_context?}``."""
        out: JSONObject = {"target": self.target, "event": self.event}
        if self.query:
            out["query"] = self.query
        if self.skipped:
            out["skipped"] = True
        if self.recall is not None:
            recall = self.recall.to_json() if hasattr(self.recall, "to_json") else dict(self.recall)
            recall["hits"] = [h.to_json() if hasattr(h, "to_json") else h for h in self.hits]
            if self.timed_out:
                recall["timed_out"] = True
            out["recall"] = recall
        extra = "\n\n".join(p for p in (self.session_context, self.local_time_context) if p.strip())
        if extra:
            out["additional_context"] = extra
        return out
