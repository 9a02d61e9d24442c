"""Composing a write: a normalized event becomes the text and metadata paxm stores."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from paxm_core.api.events import (
    EVENT_SESSION_START,
    EVENT_TOOL_FAILURE,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    HookEvent,
    HookMessage,
)
from paxm_core.passive.echo import CALL_ROLES, RESULT_ROLES, strip_event
from paxm_core.passive.templates import render_template

__all__ = ["PassiveWrite", "compose_write", "safe_text", "template_data"]

_ROLE_ALIASES = {
    "user": "user",
    "assistant": "assistant",
    **dict.fromkeys(CALL_ROLES, "tool_call"),
    **dict.fromkeys(RESULT_ROLES, "tool_result"),
}
_ROLE_LABELS = {"user": "User", "assistant": "Assistant", "tool_call": "Tool call", "tool_result": "Tool result"}


def _format_messages(messages: list[HookMessage], skip_assistant: str) -> str:
    lines: list[str] = []
    for message in messages:
        role = _ROLE_ALIASES.get(message.role.strip().lower())
        text = message.text.strip()
        if role is None or not text:
            continue
        if role == "assistant" and skip_assistant and text == skip_assistant:
            continue
        lines.append(f"{_ROLE_LABELS[role]}: {text}")
    return "\n".join(lines)


def safe_text(event: HookEvent, label: str = "") -> str:
    """The default stored text for an event (upstream's ``safe_text``).

    :param label: how the harness is named in the text (its integration's ``label``, e.g.
        ``Claude Code``); the target name when empty.
    """
    label = label.strip() or event.target.strip() or "agent"
    name = event.event.strip()
    if name == EVENT_SESSION_START:
        workspace = event.workspace.strip()
        return f"{label} session started." + (f"\nWorkspace: {workspace}" if workspace else "")
    if name == EVENT_USER_INPUT:
        prompt = event.prompt.strip()
        return f"{label} user input:\n{prompt}" if prompt else ""
    if name == EVENT_TURN_END:
        assistant = event.assistant.strip()
        sections = []
        if assistant:
            sections.append(f"{label} assistant response:\n{assistant}")
        messages = _format_messages(event.messages, assistant)
        if messages:
            sections.append(f"{label} turn messages:\n{messages}")
        return "\n\n".join(sections)
    if name in (EVENT_TOOL_USE, EVENT_TOOL_FAILURE):
        messages = _format_messages(event.messages, "")
        return f"{label} tool activity:\n{messages}" if messages else ""
    prompt = event.prompt.strip()
    return f"{label} {name or 'hook event'}:\n{prompt}" if prompt else ""


def template_data(event: HookEvent, label: str = "") -> dict[str, object]:
    """The keys a hook template can read (upstream's names); ``label`` as for :func:`safe_text`."""
    return {
        "target": event.target,
        "event": event.event,
        "query": event.query,
        "prompt": event.prompt,
        "assistant": event.assistant,
        "messages": [m.to_json() for m in event.messages],
        "workspace": event.workspace,
        "metadata": dict(event.metadata),
        "safe_text": safe_text(event, label),
        "raw_json": event.raw.strip(),
    }


@dataclass(frozen=True)
class PassiveWrite:
    """One composed hook write, ready for the capture queue.

    ``terminal`` marks a ``turn_end``: it seals the session's episode.  ``created_at`` is the
    client's capture time, so re-composing a replayed event gives an identical item.
    """

    event_id: str
    target: str
    event: str
    text: str
    admission_text: str
    profile: str
    source: str
    metadata: dict[str, str] = field(default_factory=dict)
    workspace: str = ""
    created_at: datetime | None = None
    terminal: bool = False


def compose_write(
    event: HookEvent, *, template: str, profile: str, created_at: datetime | None = None, label: str = ""
) -> PassiveWrite | None:
    """Strip recall echoes, fill ``template`` and build the write; ``None`` when empty.

    ``label`` names the harness in ``safe_text`` (the integration's ``label``).

    :raises TemplateError: the template uses unsupported syntax.
    """
    clean = strip_event(event)
    text = render_template(template or "{{ .safe_text }}", template_data(clean, label))
    if not text.strip():
        return None
    metadata = dict(clean.metadata)
    metadata["hook_target"] = clean.target
    metadata["hook_event"] = clean.event
    if clean.workspace:
        metadata["workspace"] = clean.workspace
    return PassiveWrite(
        event_id=event.event_id,
        target=clean.target,
        event=clean.event,
        text=text,
        admission_text=clean.prompt if clean.event == EVENT_USER_INPUT else "",
        profile=profile or "default",
        source=f"hook:{clean.target}:{clean.event}",
        metadata=metadata,
        workspace=clean.workspace,
        created_at=created_at,
        terminal=clean.event == EVENT_TURN_END,
    )
