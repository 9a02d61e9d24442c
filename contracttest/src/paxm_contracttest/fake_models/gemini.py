"""A fake Gemini API (``generativelanguage`` v1beta) on 127.0.0.1 for driving the real Gemini CLI offline.

Serves ``POST /v1beta/models/<model>:streamGenerateContent`` (SSE with ``alt=sse``),
``:generateContent``, ``:countTokens`` and ``GET /v1beta/models``.  Every request is recorded
in memory and appended to a JSONL log.  The reply text is ``reply`` followed by
`` [marker-seen]`` / `` [marker-absent]`` depending on whether the request contains ``marker``.

Tool mode: when the request contains ``RUN_TOOL``, offers Gemini CLI's shell tool
(``run_shell_command``) and has no ``functionResponse`` yet, the reply is one function call
running ``echo TOOL_RAN_OK``; the follow-up request gets the text reply.  ``hang`` makes every
content request wait that many seconds before answering.

Gemini CLI also asks the model side questions with ``generateContent`` and a JSON response
schema (is the user speaking next, which model to route to); those get ``{}``-shaped JSON
answers so the CLI carries on with its defaults.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["FakeGemini", "GeminiRequest"]

TOOL_TRIGGER = "RUN_TOOL"
TOOL_COMMAND = "echo TOOL_RAN_OK"
SHELL_TOOL = "run_shell_command"


class GeminiRequest(dict[str, Any]):
    """One logged request: ``t`` (epoch seconds), ``method``, ``path``, ``body`` (parsed JSON or text)."""

    @property
    def body(self) -> dict[str, Any]:
        body = self.get("body")
        return body if isinstance(body, dict) else {}

    @property
    def text(self) -> str:
        """The whole body as JSON text (for substring checks)."""
        return json.dumps(self.get("body"), ensure_ascii=False)

    @property
    def method_name(self) -> str:
        """``streamGenerateContent``, ``generateContent``, ``countTokens`` or ``""``."""
        last = str(self.get("path", "")).split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        return last.rsplit(":", 1)[-1] if ":" in last else ""

    @property
    def tool_names(self) -> set[str]:
        names: set[str] = set()
        for tool in self.body.get("tools") or []:
            for decl in (tool or {}).get("functionDeclarations") or [] if isinstance(tool, dict) else []:
                if isinstance(decl, dict):
                    names.add(str(decl.get("name", "")))
        return names

    @property
    def is_agent_step(self) -> bool:
        """A main agent-loop request: content generation offering the CLI's tools."""
        return self.method_name in ("streamGenerateContent", "generateContent") and bool(self.tool_names)

    @property
    def has_tool_result(self) -> bool:
        return any(
            isinstance(part, dict) and "functionResponse" in part
            for content in self.body.get("contents") or []
            if isinstance(content, dict)
            for part in content.get("parts") or []
        )

    def user_text(self) -> str:
        """All text parts of the request's ``user`` contents (where hook context is injected)."""
        out: list[str] = []
        for content in self.body.get("contents") or []:
            if not isinstance(content, dict) or content.get("role") != "user":
                continue
            for part in content.get("parts") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    out.append(part["text"])
        return "\n".join(out)


class FakeGemini:
    """Context manager running the fake server in a thread; ``url`` is its base URL."""

    def __init__(
        self,
        log_path: Path,
        *,
        marker: str = "",
        reply: str = "Noted, I will remember that.",
        hang: float = 0.0,
        model: str = "fake-model",
    ) -> None:
        self.log_path = log_path
        self.marker = marker
        self.reply = reply
        self.hang = hang
        self.model = model
        self.requests: list[GeminiRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (what ``GOOGLE_GEMINI_BASE_URL`` takes)."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def agent_steps(self) -> list[GeminiRequest]:
        with self._lock:
            return [r for r in self.requests if r.is_agent_step]

    def generations(self) -> list[GeminiRequest]:
        with self._lock:
            return [r for r in self.requests if r.method_name in ("streamGenerateContent", "generateContent")]

    def record(self, method: str, path: str, raw: bytes) -> GeminiRequest:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        entry = GeminiRequest(t=time.time(), method=method, path=path, body=body)
        with self._lock:
            self.requests.append(entry)
            with self.log_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return entry

    def reply_for(self, request: GeminiRequest) -> str:
        seen = self.marker and self.marker in request.text
        return self.reply + (" [marker-seen]" if seen else " [marker-absent]" if self.marker else "")

    def response(self, request: GeminiRequest) -> dict[str, Any]:
        """The ``GenerateContentResponse`` for ``request``."""
        config = request.body.get("generationConfig") or {}
        if not request.tool_names and config.get("responseMimeType") == "application/json":
            parts: list[dict[str, Any]] = [{"text": "{}"}]  # a side question: let the CLI use its defaults
        elif TOOL_TRIGGER in request.text and SHELL_TOOL in request.tool_names and not request.has_tool_result:
            args = {"command": TOOL_COMMAND, "description": "Print a probe line"}
            parts = [{"functionCall": {"name": SHELL_TOOL, "args": args}}]
        else:
            parts = [{"text": self.reply_for(request)}]
        size = max(1, len(request.text) // 4)
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": size, "candidatesTokenCount": 8, "totalTokenCount": size + 8},
            "modelVersion": self.model,
            "responseId": uuid.uuid4().hex[:16],
        }

    def __enter__(self) -> FakeGemini:
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
                    model = {"name": f"models/{fake.model}", "supportedGenerationMethods": ["generateContent"]}
                    self._json(200, {"models": [model]})
                else:
                    self._json(404, {"error": {"code": 404, "message": self.path, "status": "NOT_FOUND"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                request = fake.record("POST", self.path, raw)
                method = request.method_name
                if method == "countTokens":
                    self._json(200, {"totalTokens": max(1, len(raw) // 4)})
                    return
                if method not in ("streamGenerateContent", "generateContent"):
                    self._json(404, {"error": {"code": 404, "message": self.path, "status": "NOT_FOUND"}})
                    return
                if fake.hang:
                    time.sleep(fake.hang)
                answer = fake.response(request)
                if method == "generateContent":
                    self._json(200, answer)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                self.wfile.write(f"data: {json.dumps(answer)}\r\n\r\n".encode())
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-gemini", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
