"""A fake Chat Completions server on 127.0.0.1 for driving Kimi Code and Cline offline.

Like the OpenCode tests' ``fake_openai.FakeOpenAI`` (whose :class:`Recorded` it reuses), but the
tool call fits the harness's own shell tool: Kimi Code's ``Bash`` takes ``{"command": ...}``,
Cline's ``run_commands`` takes ``{"commands": [...]}``; the arguments follow the offered schema.

* A request whose text contains ``RUN_TOOL``, offering a shell tool and holding no tool result
  yet, is answered with one call running ``echo TOOL_RAN_OK``; every other request gets
  ``reply`` plus `` [marker-seen]`` / `` [marker-absent]`` (whether ``marker`` is in the body).
* ``hang`` delays every completion (a slow provider); SSE when ``stream`` is true.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from paxm_contracttest.fake_models.chat_completions import Recorded

__all__ = ["SHELL_TOOLS", "TOOL_COMMAND", "FakeChat", "Recorded"]

TOOL_TRIGGER = "RUN_TOOL"
TOOL_COMMAND = "echo TOOL_RAN_OK"
#: the shell tool of each harness, first offered wins
SHELL_TOOLS = ("Bash", "run_commands", "bash", "Shell")


def _functions(request: Recorded) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in request.body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            out[function["name"]] = function
    return out


class FakeChat:
    """Context manager running the server in a thread; ``url`` is its base URL (with ``/v1``)."""

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
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def completions(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.is_completion]

    def agent_steps(self) -> list[Recorded]:
        """Requests of the main agent loop (they offer tools)."""
        with self._lock:
            return [r for r in self.requests if r.is_agent_step]

    def _record(self, method: str, path: str, raw: bytes) -> Recorded:
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

    def _tool_call(self, request: Recorded) -> dict[str, Any] | None:
        if TOOL_TRIGGER not in request.text or request.has_tool_result:
            return None
        functions = _functions(request)
        name = next((n for n in SHELL_TOOLS if n in functions), None)
        if name is None:
            return None
        props = (functions[name].get("parameters") or {}).get("properties") or {}
        args: dict[str, Any] = {"commands": [TOOL_COMMAND]} if "commands" in props else {"command": TOOL_COMMAND}
        if "description" in props:
            args["description"] = "Print a probe line"
        return {"name": name, "arguments": json.dumps(args)}

    def _reply(self, raw: bytes) -> str:
        if not self.marker:
            return self.reply
        return self.reply + (" [marker-seen]" if self.marker.encode() in raw else " [marker-absent]")

    def __enter__(self) -> FakeChat:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def _json(self, code: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                fake._record("GET", self.path, b"")
                if self.path.split("?")[0].rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": self.path, "type": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                request = fake._record("POST", self.path, raw)
                if not request.is_completion:
                    self._json(404, {"error": {"message": self.path, "type": "not_found"}})
                    return
                if fake.hang:
                    time.sleep(fake.hang)
                self._complete(request, raw)

            def _complete(self, request: Recorded, raw: bytes) -> None:
                model = str(request.body.get("model") or "fake-model")
                ident, created = "chatcmpl-" + uuid.uuid4().hex[:20], int(time.time())
                call = fake._tool_call(request)
                if call is not None:
                    tool = {"index": 0, "id": "call_" + uuid.uuid4().hex[:20], "type": "function", "function": call}
                    delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [tool]}
                    finish = "tool_calls"
                else:
                    delta, finish = {"role": "assistant", "content": fake._reply(raw)}, "stop"
                usage = {"prompt_tokens": max(1, len(raw) // 4), "completion_tokens": 8, "total_tokens": 8}
                if not request.body.get("stream"):
                    message = dict(delta)
                    if "tool_calls" in message:
                        message["tool_calls"] = [
                            {k: v for k, v in c.items() if k != "index"} for c in message["tool_calls"]
                        ]
                    choice = {"index": 0, "message": message, "finish_reason": finish}
                    self._json(
                        200,
                        {
                            "id": ident,
                            "object": "chat.completion",
                            "created": created,
                            "model": model,
                            "choices": [choice],
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

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-chat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
