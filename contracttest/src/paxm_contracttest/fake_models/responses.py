"""A fake OpenAI Responses API on 127.0.0.1 for driving the real Codex CLI offline.

Serves ``POST /v1/responses`` (SSE when ``stream`` is true, JSON otherwise) and
``GET /v1/models``.  Every request is recorded (see
:class:`~paxm_contracttest.fake_models.server.FakeModelServer`).

The reply text is ``reply`` followed by `` [marker-seen]`` when the request body contains
``marker``.  Tool mode: when the *user's* latest message contains ``RUN_TOOL``, the request
offers a shell tool (``exec_command`` / ``shell``) and carries no tool output yet, the answer is
one function call running ``tool_command`` (default ``echo TOOL_RAN_OK``); the follow-up
request (a tool output after the user's message) gets the text reply.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from paxm_contracttest.fake_models.server import TOOL_COMMAND, TOOL_TRIGGER, FakeModelServer, JsonHandler, Recorded

__all__ = ["FakeResponses", "Recorded", "input_text", "user_text"]

SHELL_TOOLS = ("exec_command", "shell", "local_shell", "bash")


def _item_texts(item: dict[str, Any]) -> Iterator[str]:
    content = item.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]


def input_text(request: Recorded, roles: tuple[str, ...] = ("user", "developer", "system")) -> str:
    """All text of ``input[]`` message items with one of ``roles`` (hook context arrives as developer items)."""
    body = request.get("body")
    parts: list[str] = []
    for item in body.get("input", []) if isinstance(body, dict) else []:
        if isinstance(item, dict) and item.get("role") in roles:
            parts.extend(_item_texts(item))
    return "\n".join(parts)


def user_text(body: Any) -> str:
    """The text of the last ``role: user`` item (what the user typed this turn)."""
    items = body.get("input", []) if isinstance(body, dict) else []
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role") == "user":
            return "\n".join(_item_texts(item))
    return ""


def _answered(items: Any) -> bool:
    """Whether a tool output follows the latest user message (a resumed session's old calls do not count)."""
    for item in reversed(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        if str(item.get("type", "")).endswith("call_output"):
            return True
        if item.get("role") == "user":
            return False
    return False


class _ResponsesHandler(JsonHandler):
    """Responses (function calls in tool mode) and models."""

    fake: ClassVar[FakeResponses]

    def do_POST(self) -> None:
        raw, entry = self.record_post()
        if not entry.route.endswith("/responses"):
            self.send_json(404, self.fake.not_found(self.path))
            return
        self._responses(entry.get("body"), raw)

    def _sse(self, events: list[dict[str, Any]]) -> None:
        self.start_events()
        for seq, event in enumerate(events):
            event["sequence_number"] = seq
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()

    def _responses(self, body: Any, raw: bytes) -> None:
        body = body if isinstance(body, dict) else {}
        base, usage = _response_base(body), _usage(raw)
        call = self.fake.tool_call_for(body)
        item, added, middle = _function_call(*call) if call is not None else _message(self.fake.reply_for(raw))
        if not body.get("stream"):
            self.send_json(200, dict(base, status="completed", output=[item], usage=usage))
            return
        self._sse(
            [
                {
                    "type": "response.created",
                    "response": dict(base, status="in_progress", output=[], usage=None),
                },
                {"type": "response.output_item.added", "output_index": 0, "item": added},
                *middle,
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                {
                    "type": "response.completed",
                    "response": dict(base, status="completed", output=[item], usage=usage),
                },
            ]
        )


class FakeResponses(FakeModelServer):
    """Context manager running the fake server in a thread; ``url`` is Codex's ``base_url`` (with ``/v1``)."""

    handler_type = _ResponsesHandler
    thread_name = "fake-responses"

    def __init__(
        self,
        log_path: Path,
        *,
        marker: str = "",
        reply: str = "Noted, I will remember that.",
        tool_command: str = TOOL_COMMAND,
    ) -> None:
        super().__init__(log_path, marker=marker, reply=reply)
        self.tool_command = tool_command

    def responses(self) -> list[Recorded]:
        """Recorded ``/v1/responses`` requests, in arrival order."""
        return self.recorded("/responses")

    def tool_call_for(self, body: Any) -> tuple[str, str] | None:
        """(tool name, JSON arguments) when this request should get a shell tool call."""
        if not isinstance(body, dict) or TOOL_TRIGGER not in user_text(body):
            return None
        if _answered(body.get("input", [])):
            return None
        for tool in body.get("tools") or []:
            if not isinstance(tool, dict) or tool.get("name") not in SHELL_TOOLS:
                continue
            props = (tool.get("parameters") or {}).get("properties") or {}
            command = self.tool_command
            if "cmd" in props:
                return str(tool["name"]), json.dumps({"cmd": command})
            if "command" in props:
                value: Any = ["bash", "-lc", command] if props["command"].get("type") == "array" else command
                return str(tool["name"]), json.dumps({"command": value})
        return None


#: a Responses API output item, its in-progress form, and the stream events between them
_Output = tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]


def _response_base(body: dict[str, Any]) -> dict[str, Any]:
    """The fields every Responses API response object carries."""
    return {
        "id": "resp_" + uuid.uuid4().hex[:20],
        "object": "response",
        "created_at": int(time.time()),
        "model": body.get("model", "fake-model"),
        "error": None,
        "incomplete_details": None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "metadata": {},
    }


def _usage(raw: bytes) -> dict[str, Any]:
    """Token counts roughly proportional to the request (a quarter of its bytes in, 8 out)."""
    tokens_in = max(1, len(raw) // 4)
    return {
        "input_tokens": tokens_in,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 8,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens_in + 8,
    }


def _function_call(name: str, args: str) -> _Output:
    """A completed ``function_call`` item and the argument events a stream sends for it."""
    item: dict[str, Any] = {
        "id": "fc_" + uuid.uuid4().hex[:20],
        "type": "function_call",
        "status": "completed",
        "call_id": "call_" + uuid.uuid4().hex[:20],
        "name": name,
        "arguments": args,
    }
    where = {"item_id": item["id"], "output_index": 0}
    middle = [
        {"type": "response.function_call_arguments.delta", **where, "delta": args},
        {"type": "response.function_call_arguments.done", **where, "arguments": args},
    ]
    return item, dict(item, status="in_progress", arguments=""), middle


def _message(text: str) -> _Output:
    """A completed assistant message item and the content events a stream sends for it."""
    iid = "msg_" + uuid.uuid4().hex[:20]
    item: dict[str, Any] = {
        "id": iid,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    added = {"id": iid, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": iid, "output_index": 0, "content_index": 0}
    middle = [
        {"type": "response.content_part.added", **where, "part": part},
        {"type": "response.output_text.delta", **where, "delta": text, "logprobs": []},
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": dict(part, text=text)},
    ]
    return item, added, middle
