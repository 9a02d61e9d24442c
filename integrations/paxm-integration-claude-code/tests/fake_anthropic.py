"""A fake Anthropic Messages API on 127.0.0.1 for driving the real Claude Code binary offline.

Serves ``POST /v1/messages`` (SSE when ``stream`` is true, JSON otherwise),
``POST /v1/messages/count_tokens`` and ``GET /v1/models``.  Every request is recorded (arrival
time, path, parsed body) in memory and appended to a JSONL log, so tests can check exactly what
the model was sent.  The reply text is ``reply`` (default: a fixed sentence) followed by
`` [marker-seen]`` when the request body contains ``marker``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["FakeAnthropic", "Recorded"]


class Recorded(dict[str, Any]):
    """One logged request: ``t`` (epoch seconds), ``method``, ``path``, ``body`` (parsed JSON or text)."""

    @property
    def text(self) -> str:
        """The whole body as JSON text (for substring checks)."""
        return json.dumps(self.get("body"), ensure_ascii=False)

    @property
    def is_turn(self) -> bool:
        """A main-loop Messages call (has tools), not a title/quota side request."""
        body = self.get("body")
        return self.get("path", "").split("?")[0].endswith("/v1/messages") and isinstance(body, dict)


class FakeAnthropic:
    """Context manager running the fake server in a thread; ``url`` is its base URL."""

    def __init__(self, log_path: Path, *, marker: str = "", reply: str = "Noted, I will remember that.") -> None:
        self.log_path = log_path
        self.marker = marker
        self.reply = reply
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no ``/v1``: Claude Code appends it)."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def messages(self) -> list[Recorded]:
        """Recorded ``/v1/messages`` requests (not token counting), in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.is_turn]

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

    def __enter__(self) -> FakeAnthropic:
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
                    self._json(200, {"data": [{"id": "claude-sonnet-4-5", "type": "model"}], "has_more": False})
                else:
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                fake.record("POST", self.path, raw)
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/messages/count_tokens"):
                    self._json(200, {"input_tokens": max(1, len(raw) // 4)})
                elif path.endswith("/messages"):
                    self._messages(raw)
                else:
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})

            def _messages(self, raw: bytes) -> None:
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                text = fake.reply_for(raw)
                model = body.get("model", "claude-sonnet-4-5") if isinstance(body, dict) else "claude-sonnet-4-5"
                message = {
                    "id": "msg_" + uuid.uuid4().hex[:20],
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": max(1, len(raw) // 4), "output_tokens": 1},
                }
                if not (isinstance(body, dict) and body.get("stream")):
                    message.update(content=[{"type": "text", "text": text}], stop_reason="end_turn")
                    self._json(200, message)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                events: list[tuple[str, dict[str, Any]]] = [
                    ("message_start", {"type": "message_start", "message": message}),
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                    ),
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                    ),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": 8},
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ]
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
