"""A fake Anthropic Messages API on 127.0.0.1 for driving the real Claude Code binary offline.

Serves ``POST /v1/messages`` (SSE when ``stream`` is true, JSON otherwise),
``POST /v1/messages/count_tokens`` and ``GET /v1/models``.  Every request is recorded (see
:class:`~paxm_contracttest.fake_models.server.FakeModelServer`).  The reply text is ``reply``
(default: a fixed sentence) followed by `` [marker-seen]`` when the request body contains
``marker``.

Tool mode (``tool_call=(name, input)``): a request that offers the tool ``name``, whose body
contains ``RUN_TOOL`` and that holds no tool result yet is answered
with one ``tool_use`` block calling it with ``input``; the follow-up request gets the text reply.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, ClassVar

from paxm_contracttest.fake_models.server import TOOL_TRIGGER, FakeModelServer, JsonHandler
from paxm_contracttest.fake_models.server import Recorded as _Recorded

__all__ = ["FakeAnthropic", "Recorded"]


class Recorded(_Recorded):
    """One logged Messages API request."""

    @property
    def is_turn(self) -> bool:
        """A main-loop Messages call (has tools), not a title/quota side request."""
        return self.route.endswith("/v1/messages") and isinstance(self.get("body"), dict)


def _has_tool_result(body: dict[str, Any]) -> bool:
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(isinstance(c, dict) and c.get("type") == "tool_result" for c in content):
            return True
    return False


class _MessagesHandler(JsonHandler):
    """Messages, token counting and models."""

    fake: ClassVar[FakeAnthropic]

    def do_POST(self) -> None:
        raw, request = self.record_post()
        path = request.route
        if path.endswith("/messages/count_tokens"):
            self.send_json(200, {"input_tokens": max(1, len(raw) // 4)})
        elif path.endswith("/messages"):
            self._messages(raw)
        else:
            self.send_json(404, self.fake.not_found(path))

    def _messages(self, raw: bytes) -> None:
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        text = self.fake.reply_for(raw)
        model = body.get("model", "claude-sonnet-4-5") if isinstance(body, dict) else "claude-sonnet-4-5"
        message: dict[str, Any] = {
            "id": "msg_" + uuid.uuid4().hex[:20],
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": max(1, len(raw) // 4), "output_tokens": 1},
        }
        call = self.fake.planned_call(body, raw)
        stop = "tool_use" if call else "end_turn"
        if call:
            block: dict[str, Any] = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20]}
            block.update(name=call[0], input=call[1])
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(call[1])}
        else:
            block = {"type": "text", "text": text}
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": text}
        if not (isinstance(body, dict) and body.get("stream")):
            message.update(content=[block], stop_reason=stop)
            self.send_json(200, message)
            return
        self.start_events()
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 8},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()


class FakeAnthropic(FakeModelServer):
    """Context manager running the fake server in a thread; ``url`` is its base URL."""

    handler_type = _MessagesHandler
    recorded_type = Recorded
    thread_name = "fake-anthropic"
    #: no ``/v1``: Claude Code appends it
    url_suffix = ""

    def __init__(
        self,
        log_path: Path,
        *,
        tool_call: tuple[str, dict[str, Any]] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(log_path, **options)
        self.tool_call = tool_call

    def planned_call(self, body: Any, raw: bytes) -> tuple[str, dict[str, Any]] | None:
        """The tool call answering this request in tool mode, else ``None``."""
        if self.tool_call is None or not isinstance(body, dict) or TOOL_TRIGGER.encode() not in raw:
            return None
        offered = {str(t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)}
        if self.tool_call[0] not in offered or _has_tool_result(body):
            return None
        return self.tool_call

    def messages(self) -> list[Recorded]:
        """Recorded ``/v1/messages`` requests (not token counting), in arrival order."""
        return [r for r in self.recorded_as(Recorded) if r.is_turn]

    def models_body(self) -> Any:
        """Anthropic's model list."""
        return {"data": [{"id": "claude-sonnet-4-5", "type": "model"}], "has_more": False}

    def not_found(self, path: str) -> Any:
        """Anthropic's error shape."""
        return {"type": "error", "error": {"type": "not_found_error", "message": path}}
