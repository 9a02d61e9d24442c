"""The generic payload decoder: native JSON in, :class:`HookEvent` out (upstream's generic field names).

Never raises on bad input (anything but a JSON object is an empty payload), and removes hidden
reasoning (thinking blocks, ``reasoning`` keys ...) before any template or write sees it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from paxm_core.api.events import EVENT_TOOL_FAILURE, EVENT_TOOL_USE, HookEvent, HookMessage
from paxm_core.api.json import JSONObject

__all__ = ["MAX_RAW_BYTES", "decode_generic", "messages_from_value", "parse_payload", "sanitize", "value_text"]

#: payloads larger than this are decoded as empty: no harness sends megabytes of hook JSON on
#: purpose, and parsing a hostile one must not stall the hook.
MAX_RAW_BYTES = 8 * 1024 * 1024
#: deeper JSON is truncated by the sanitizer (Python's json has its own recursion limit too).
MAX_DEPTH = 64

_REASONING_TYPES = frozenset({"thinking", "reasoning", "analysis", "redacted_thinking"})
#: keys dropped from any JSON object: every reasoning block type, and these
_REASONING_KEYS = _REASONING_TYPES.union(
    ("thinking_content", "reasoning_content", "chain_of_thought", "thought", "thoughts")
)
_CALL_TYPES = frozenset({"tool_use", "tool_call", "function_call"})
_RESULT_TYPES = frozenset({"tool_result", "tool_response", "function_call_output", "function_result"})
_PROMPT_KEYS = ("prompt", "user_prompt", "input", "message")
_NESTED_PROMPTS = (("userPromptSubmit", "prompt"), ("taskStart", "task"), ("taskResume", "task"))
_ASSISTANT_KEYS = (
    "last_assistant_message",
    "assistant_response",
    "assistant",
    "assistant_message",
    "response",
    "output",
)
_METADATA_KEYS = ("session_id", "conversation_id", "taskId", "transcript_path", "cwd", "current_dir", "model", "source")


def parse_payload(raw: bytes | str) -> JSONObject:
    """Parse ``raw`` as a JSON object; anything else (empty, invalid, binary, huge) gives ``{}``."""
    if len(raw) > MAX_RAW_BYTES:
        return {}
    text = (raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw).strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(value, dict):
        return {}
    # JSON may escape a lone surrogate (a cut emoji); no UTF-8 writer downstream accepts one,
    # so it becomes U+FFFD here instead of dropping the whole event later.
    from paxm_core.textsafe import scrub

    scrubbed: JSONObject = scrub(value)
    return scrubbed


def _str(obj: Mapping[str, object], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _first(*values: object) -> object:
    for value in values:
        if value is not None:
            return value
    return None


def sanitize(value: object, depth: int = 0) -> object:
    """Remove hidden reasoning from a JSON value, recursively; ``None`` means "drop it"."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, list):
        out = [sanitize(item, depth + 1) for item in value]
        return [item for item in out if item is not None]
    if isinstance(value, dict):
        kind = value.get("type")
        if isinstance(kind, str) and kind.lower() in _REASONING_TYPES:
            return None
        clean: dict[str, object] = {}
        for key, item in value.items():
            if str(key).strip().lower() in _REASONING_KEYS:
                continue
            cleaned = sanitize(item, depth + 1)
            if cleaned is not None:
                clean[str(key)] = cleaned
        return clean
    return value


def value_text(value: object) -> str:
    """Render a tool input/output as text: strings as-is, structures as sanitized compact JSON.

    A string that looks like JSON is parsed and sanitized too, because tools often return JSON
    text that embeds a model's reasoning.
    """
    value = sanitize(value)
    if value is None:
        return ""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "["):
            try:
                parsed = json.loads(text)
            except (ValueError, RecursionError):
                return text
            value = sanitize(parsed)
            if value is None:
                return ""
        else:
            return text
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).strip()
    except (TypeError, ValueError, RecursionError):
        return ""


def _call_text(name: str, args: str) -> str:
    return " ".join(part for part in (name, args) if part.strip()).strip()


def _tool_message(kind: str, block: Mapping[str, object], source: str) -> list[HookMessage]:
    """A tool call or tool result block (``kind`` is one of them) as a message, if it has text."""
    if kind in _CALL_TYPES:
        name = (_str(block, "name") or _str(block, "tool")).strip()
        text = _call_text(name, value_text(_first(block.get("input"), block.get("arguments"), block.get("args"))))
    else:
        text = value_text(_first(block.get("content"), block.get("output"), block.get("result")))
    return [HookMessage("tool_call" if kind in _CALL_TYPES else "tool_result", text, source)] if text else []


def _content_messages(role: str, source: str, value: object) -> list[HookMessage]:
    if not isinstance(value, list):
        return []
    out: list[HookMessage] = []
    for block in value:
        if not isinstance(block, dict):
            continue
        kind = (_str(block, "type") or role).lower()
        if kind in _REASONING_TYPES:
            continue
        if kind in _CALL_TYPES or kind in _RESULT_TYPES:
            out.extend(_tool_message(kind, block, source))
        else:
            text = (_str(block, "text") or _str(block, "content")).strip()
            if text:
                out.append(HookMessage(role, text, source))
    return out


def messages_from_value(value: object, depth: int = 0) -> list[HookMessage]:
    """Normalize a ``messages`` array (Claude blocks, OpenAI ``tool_calls``, generic ``{role,text}``)."""
    if not isinstance(value, list) or depth > 4:
        return []
    out: list[HookMessage] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        nested = item.get("message")
        if isinstance(nested, dict):
            out.extend(messages_from_value([nested], depth + 1))
            continue
        role = _str(item, "role").strip()
        source = _str(item, "source")
        kind = _str(item, "type").lower()
        if not role and (kind in _CALL_TYPES or kind in _RESULT_TYPES):
            out.extend(_tool_message(kind, item, source))
            continue
        if role.lower() in _REASONING_TYPES or (not role and kind in _REASONING_TYPES):
            continue
        text = (_str(item, "text") or _str(item, "content")).strip()
        if role and text:
            out.append(HookMessage(role, text, source))
        out.extend(_content_messages(role, source, item.get("content")))
        calls = item.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                function = call.get("function")
                out.extend(_tool_message("tool_call", function if isinstance(function, dict) else call, source))
    return out


def _tool_event_messages(obj: Mapping[str, object]) -> list[HookMessage]:
    name = _str(obj, "tool_name").strip()
    args = value_text(obj.get("tool_input"))
    response = value_text(_first(obj.get("tool_response"), obj.get("tool_result"), obj.get("output")))
    if not response:
        failure = _str(obj, "error").strip()
        if failure:
            response = "Error: " + failure
    out: list[HookMessage] = []
    call = _call_text(name, args)
    if call:
        out.append(HookMessage("tool_call", call))
    if response:
        out.append(HookMessage("tool_result", response))
    return out


def _workspace(obj: Mapping[str, object]) -> str:
    # the payload names the directory; which workspace that is, is paxm_core.workspace's rule
    from paxm_core.workspace import resolve_workspace

    for key in ("workspace", "cwd", "current_dir"):
        value = _str(obj, key).strip()
        if value:
            return resolve_workspace(value)
    for key in ("workspace_roots", "workspaceRoots"):
        roots = obj.get(key)
        if isinstance(roots, list):
            for root in roots:
                if isinstance(root, str) and root.strip():
                    return resolve_workspace(root.strip())
    return ""


def _prompt(obj: Mapping[str, object]) -> str:
    for key in _PROMPT_KEYS:
        value = _str(obj, key)
        if value.strip():
            return value
    for parent, child in _NESTED_PROMPTS:
        nested = obj.get(parent)
        if isinstance(nested, dict):
            value = _str(nested, child).strip()
            if value:
                return value
    return ""


def _metadata(obj: Mapping[str, object]) -> dict[str, str]:
    out: dict[str, str] = {}
    explicit = obj.get("metadata")
    if isinstance(explicit, dict):
        for key, value in explicit.items():
            if isinstance(value, bool):
                out[str(key)] = "true" if value else "false"
            elif isinstance(value, (str, int, float)):
                out[str(key)] = str(value)
    for key in _METADATA_KEYS:
        value = _str(obj, key)
        if value.strip():
            out["session_id" if key in ("conversation_id", "taskId") else key] = value
    return out


def decode_generic(raw: bytes | str, target: str, event: str, native_event: str = "") -> HookEvent:
    """Decode a native or generic payload into a :class:`HookEvent`.

    Payload fields (``target``, ``event``) fill the command-line ``target``/``event`` only when
    the flags are empty; an event still empty is ``user_input`` (upstream's default).  Native
    event names (``UserPromptSubmit``...) are the integration's business: it maps them before
    calling this function and passes the original as ``native_event``.
    """
    obj = parse_payload(raw)
    raw_text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    target = (target or _str(obj, "target")).strip()
    event = (event or _str(obj, "event") or "user_input").strip()
    limit = obj.get("limit")
    hook = HookEvent(
        target=target,
        event=event,
        native_event=native_event or _str(obj, "hook_event_name"),
        query=_str(obj, "query"),
        prompt=_prompt(obj),
        workspace=_workspace(obj),
        metadata=_metadata(obj),
        limit=limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else 0,
        raw=raw_text.strip() if len(raw_text) <= MAX_RAW_BYTES else "",
        assistant=next((text for key in _ASSISTANT_KEYS if (text := _str(obj, key).strip())), ""),
    )
    messages = messages_from_value(obj.get("messages"))
    if event in (EVENT_TOOL_USE, EVENT_TOOL_FAILURE):
        messages.extend(_tool_event_messages(obj))
    unique: dict[tuple[str, str], HookMessage] = {}  # the first of messages alike in role and text
    for message in messages:
        unique.setdefault((message.role.strip().lower(), message.text.strip()), message)
    hook.messages = list(unique.values())
    return hook
