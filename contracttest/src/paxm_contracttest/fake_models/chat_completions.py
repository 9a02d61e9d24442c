"""A fake OpenAI Chat Completions API on 127.0.0.1 for driving the real OpenCode binary offline.

Serves ``POST /v1/chat/completions`` (SSE when ``stream`` is true, JSON otherwise) and
``GET /v1/models``.  Every request is recorded (see
:class:`~paxm_contracttest.fake_models.server.FakeModelServer`).  The reply text is
``reply`` followed by `` [marker-seen]`` / `` [marker-absent]`` depending on whether the request
body contains ``marker``.

Tool mode: when the conversation's text contains ``RUN_TOOL``, the request offers a shell tool
(``bash``) and has no tool result yet, the reply is one tool call running ``echo TOOL_RAN_OK``;
the follow-up request (with the tool result) gets the text reply.  ``hang`` makes every
completion request wait that many seconds before answering (a hanging provider).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, ClassVar

from paxm_contracttest.fake_models.server import TOOL_COMMAND, TOOL_TRIGGER, FakeModelServer, JsonHandler, messages_text
from paxm_contracttest.fake_models.server import Recorded as _Recorded

__all__ = ["FakeOpenAI", "Recorded"]

#: the shell tool's name in each harness that uses this server (OpenCode and Kilo: ``bash``;
#: Qwen Code: ``run_shell_command``), first offered wins
SHELL_TOOLS = ("bash", "run_shell_command")


class Recorded(_Recorded):
    """One logged Chat Completions request."""

    @property
    def is_completion(self) -> bool:
        """A ``/chat/completions`` request."""
        return self.route.endswith("/chat/completions")

    @property
    def is_agent_step(self) -> bool:
        """A main agent-loop request (it offers tools), not OpenCode's title-generation request."""
        return self.is_completion and bool(self.body.get("tools"))

    @property
    def has_tool_result(self) -> bool:
        return any(m.get("role") == "tool" for m in self.body.get("messages", []) if isinstance(m, dict))

    def user_text(self) -> str:
        """All text of the request's user messages (where the plugin injects recall)."""
        return messages_text(self.body.get("messages"), ("user",))


class _ChatHandler(JsonHandler):
    """Chat completions (tool calls in tool mode) and models."""

    fake: ClassVar[FakeOpenAI]

    def do_POST(self) -> None:
        raw, request = self.record_post()
        if not isinstance(request, Recorded) or not request.is_completion:
            self.send_json(404, self.fake.not_found(self.path))
            return
        if self.fake.hang:
            time.sleep(self.fake.hang)
        self._complete(request, raw)

    def _complete(self, request: Recorded, raw: bytes) -> None:
        body = request.body
        model = str(body.get("model") or "fake-model")
        ident = "chatcmpl-" + uuid.uuid4().hex[:20]
        created = int(time.time())
        function = self.fake.tool_call(request)
        if function is not None:
            call = {"index": 0, "id": "call_" + uuid.uuid4().hex[:20], "type": "function", "function": function}
            delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            delta = {"role": "assistant", "content": self.fake.reply_for(raw)}
            finish = "stop"
        usage = {"prompt_tokens": max(1, len(raw) // 4), "completion_tokens": 8, "total_tokens": 8}
        if not body.get("stream"):
            message = dict(delta)
            if "tool_calls" in message:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in delta["tool_calls"]]
            self.send_json(
                200,
                {
                    "id": ident,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
            return
        self.start_events()
        chunks: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {"choices": [], "usage": usage},
        ]
        for chunk in chunks:
            chunk.update(id=ident, object="chat.completion.chunk", created=created, model=model)
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


class FakeOpenAI(FakeModelServer):
    """Context manager running the fake server in a thread; ``url`` is its base URL (with ``/v1``)."""

    handler_type = _ChatHandler
    recorded_type = Recorded
    thread_name = "fake-openai"

    def completions(self) -> list[Recorded]:
        """Recorded chat completion requests, in arrival order."""
        return [r for r in self.recorded_as(Recorded) if r.is_completion]

    def agent_steps(self) -> list[Recorded]:
        """Recorded agent-loop requests (they offer tools), in arrival order."""
        return [r for r in self.recorded_as(Recorded) if r.is_agent_step]

    def tool_call(self, request: Recorded) -> dict[str, Any] | None:
        """The function call answering ``request`` in tool mode (``None``: answer with text)."""
        tools = request.body.get("tools") or []
        names = {str((t.get("function") or {}).get("name", "")) for t in tools if isinstance(t, dict)}
        name = next((n for n in SHELL_TOOLS if n in names), None)
        if TOOL_TRIGGER not in request.text or name is None or request.has_tool_result:
            return None
        arguments = {"command": TOOL_COMMAND, "description": "Print a probe line"}
        return {"name": name, "arguments": json.dumps(arguments)}
