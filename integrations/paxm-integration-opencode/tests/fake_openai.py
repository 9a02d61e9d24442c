"""A fake OpenAI Chat Completions API on 127.0.0.1 for driving the real OpenCode binary offline.

Serves ``POST /v1/chat/completions`` (SSE when ``stream`` is true, JSON otherwise) and
``GET /v1/models``.  Every request (arrival time, path, parsed body) is recorded in memory and
appended to a JSONL log, so tests can check exactly what the model was sent.  The reply text is
``reply`` followed by `` [marker-seen]`` / `` [marker-absent]`` depending on whether the request
body contains ``marker``.

Tool mode: when the conversation's text contains ``RUN_TOOL``, the request offers a shell tool
(``bash``) and has no tool result yet, the reply is one tool call running ``echo TOOL_RAN_OK``;
the follow-up request (with the tool result) gets the text reply.  ``hang`` makes every
completion request wait that many seconds before answering (a hanging provider).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["FakeOpenAI", "Recorded"]

TOOL_TRIGGER = "RUN_TOOL"
TOOL_COMMAND = "echo TOOL_RAN_OK"
#: the shell tool's name in each harness that uses this server (OpenCode and Kilo: ``bash``;
#: Qwen Code: ``run_shell_command``), first offered wins
SHELL_TOOLS = ("bash", "run_shell_command")


class Recorded(dict[str, Any]):
    """One logged request: ``t`` (epoch seconds), ``method``, ``path``, ``body`` (parsed JSON or text)."""

    @property
    def text(self) -> str:
        """The whole body as JSON text (for substring checks)."""
        return json.dumps(self.get("body"), ensure_ascii=False)

    @property
    def body(self) -> dict[str, Any]:
        body = self.get("body")
        return body if isinstance(body, dict) else {}

    @property
    def is_completion(self) -> bool:
        return self.get("path", "").split("?")[0].rstrip("/").endswith("/chat/completions")

    @property
    def is_agent_step(self) -> bool:
        """A main agent-loop request (it offers tools), not OpenCode's title-generation request."""
        return self.is_completion and bool(self.body.get("tools"))

    @property
    def has_tool_result(self) -> bool:
        return any(m.get("role") == "tool" for m in self.body.get("messages", []) if isinstance(m, dict))

    def user_text(self) -> str:
        """All text of the request's user messages (where the plugin injects recall)."""
        out: list[str] = []
        for message in self.body.get("messages", []):
            if not isinstance(message, dict) or message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return "\n".join(out)


class FakeOpenAI:
    """Context manager running the fake server in a thread; ``url`` is its base URL (with ``/v1``)."""

    def __init__(
        self, log_path: Path, *, marker: str = "", reply: str = "Noted, I will remember that.", hang: float = 0.0
    ) -> None:
        self.log_path = log_path
        self.marker = marker
        self.reply = reply
        self.hang = hang
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def completions(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.is_completion]

    def agent_steps(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.is_agent_step]

    def record(self, method: str, path: str, raw: bytes) -> Recorded:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        entry = Recorded(t=time.time(), method=method, path=path, body=body)
        with self._lock:
            self.requests.append(entry)
            with self.log_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return entry

    def reply_for(self, raw: bytes) -> str:
        seen = self.marker and self.marker.encode() in raw
        return self.reply + (" [marker-seen]" if seen else " [marker-absent]" if self.marker else "")

    @staticmethod
    def wants_tool(request: Recorded) -> bool:
        tools = request.body.get("tools") or []
        names = {str((t.get("function") or {}).get("name", "")) for t in tools if isinstance(t, dict)}
        return TOOL_TRIGGER in request.text and bool(names & set(SHELL_TOOLS)) and not request.has_tool_result

    @staticmethod
    def shell_tool(request: Recorded) -> str:
        tools = request.body.get("tools") or []
        names = {str((t.get("function") or {}).get("name", "")) for t in tools if isinstance(t, dict)}
        return next((n for n in SHELL_TOOLS if n in names), "bash")

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
                pass

            def _json(self, code: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                fake.record("GET", self.path, b"")
                if self.path.split("?")[0].rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": self.path, "type": "not_found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                request = fake.record("POST", self.path, raw)
                if not request.is_completion:
                    self._json(404, {"error": {"message": self.path, "type": "not_found"}})
                    return
                if fake.hang:
                    time.sleep(fake.hang)
                self._complete(request, raw)

            def _complete(self, request: Recorded, raw: bytes) -> None:
                body = request.body
                model = str(body.get("model") or "fake-model")
                ident = "chatcmpl-" + uuid.uuid4().hex[:20]
                created = int(time.time())
                if fake.wants_tool(request):
                    call = {
                        "index": 0,
                        "id": "call_" + uuid.uuid4().hex[:20],
                        "type": "function",
                        "function": {
                            "name": fake.shell_tool(request),
                            "arguments": json.dumps({"command": TOOL_COMMAND, "description": "Print a probe line"}),
                        },
                    }
                    delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
                    finish = "tool_calls"
                else:
                    delta = {"role": "assistant", "content": fake.reply_for(raw)}
                    finish = "stop"
                usage = {"prompt_tokens": max(1, len(raw) // 4), "completion_tokens": 8, "total_tokens": 8}
                if not body.get("stream"):
                    message = dict(delta)
                    if "tool_calls" in message:
                        message["tool_calls"] = [
                            {k: v for k, v in c.items() if k != "index"} for c in delta["tool_calls"]
                        ]
                    self._json(
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
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                chunks = [
                    {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                    {"choices": [], "usage": usage},
                ]
                for chunk in chunks:
                    chunk.update(id=ident, object="chat.completion.chunk", created=created, model=model)
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
