"""What every fake model API shares: request recording, the marker reply, the server thread."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

__all__ = ["TOOL_COMMAND", "TOOL_TRIGGER", "FakeModelServer", "JsonHandler", "Recorded", "messages_text"]

#: a request whose text holds this (and that offers a shell tool) is answered with a call of it
TOOL_TRIGGER = "RUN_TOOL"
#: what that tool call runs
TOOL_COMMAND = "echo TOOL_RAN_OK"

_R = TypeVar("_R", bound="Recorded")


def messages_text(messages: Any, roles: tuple[str, ...] = ()) -> str:
    """The text of chat ``messages`` (string content or text blocks), of ``roles`` only when given."""
    out: list[str] = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or (roles and message.get("role") not in roles):
            continue
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return "\n".join(out)


class Recorded(dict[str, Any]):
    """One logged request: ``t`` (epoch seconds), ``method``, ``path``, ``body`` (parsed JSON or text)."""

    @property
    def text(self) -> str:
        """The whole body as JSON text (for substring checks)."""
        return json.dumps(self.get("body"), ensure_ascii=False)

    @property
    def body(self) -> dict[str, Any]:
        """The parsed JSON body (``{}`` when it was not a JSON object)."""
        body = self.get("body")
        return body if isinstance(body, dict) else {}

    @property
    def route(self) -> str:
        """The path without query string or trailing slash."""
        return str(self.get("path", "")).split("?")[0].rstrip("/")


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler with JSON and server-sent-event helpers."""

    protocol_version = "HTTP/1.1"
    #: the fake model server this handler serves (bound by :meth:`FakeModelServer.bind`)
    fake: ClassVar[FakeModelServer]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
        pass

    def read_body(self) -> bytes:
        """The request body (``Content-Length`` bytes)."""
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def record_post(self) -> tuple[bytes, Recorded]:
        """Read this POST's body and record it with :attr:`fake`; the raw body and its record."""
        raw = self.read_body()
        return raw, self.fake.record("POST", self.path, raw)

    def do_GET(self) -> None:
        """Record the GET; answer the fake's models on a ``/models`` route, else its 404."""
        self.fake.record("GET", self.path, b"")
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self.send_json(200, self.fake.models_body())
        else:
            self.send_json(404, self.fake.not_found(self.path))

    def send_json(self, code: int, payload: Any) -> None:
        """One JSON response with its length."""
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_events(self) -> None:
        """Headers of a ``text/event-stream`` response that ends by closing the connection."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True


class FakeModelServer:
    """Base of the fakes: a context manager serving :meth:`handler` on ``127.0.0.1:<free port>``.

    :param log_path: the JSONL file every request is appended to.
    :param marker: when set, replies end in `` [marker-seen]`` or `` [marker-absent]``.
    :param reply: the assistant's text.
    :param hang: seconds every content request waits before its answer (a slow provider), where
        the API's handler honours it.
    """

    #: the :class:`Recorded` subclass requests are recorded as
    recorded_type: ClassVar[type[Recorded]] = Recorded
    #: the server thread's name
    thread_name: ClassVar[str] = "fake-model"
    #: the API's request handler (a subclass serves its routes; GET and 404s are shared)
    handler_type: ClassVar[type[JsonHandler]] = JsonHandler
    #: appended to ``http://127.0.0.1:<port>`` in :attr:`url`
    url_suffix: ClassVar[str] = "/v1"

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
        """The base URL a harness is pointed at."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.url_suffix}"

    def recorded(self, route_suffix: str) -> list[Recorded]:
        """Recorded requests whose path ends in ``route_suffix``, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.route.endswith(route_suffix)]

    def recorded_as(self, kind: type[_R]) -> list[_R]:
        """Recorded requests of ``kind`` (the API's :attr:`recorded_type`), in arrival order."""
        with self._lock:
            return [r for r in self.requests if isinstance(r, kind)]

    def record(self, method: str, path: str, raw: bytes) -> Recorded:
        """Log one request (in memory and to ``log_path``) and return it."""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        entry = self.recorded_type(t=time.time(), method=method, path=path, body=body)
        with self._lock:
            self.requests.append(entry)
            with self.log_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return entry

    def reply_for(self, raw: bytes) -> str:
        """``reply``, plus whether the request contained ``marker`` (when one is set)."""
        seen = self.marker and self.marker.encode() in raw
        return self.reply + (" [marker-seen]" if seen else " [marker-absent]" if self.marker else "")

    def models_body(self) -> Any:
        """The body of ``GET .../models`` (OpenAI's list shape unless the API's differs)."""
        return {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}

    def not_found(self, path: str) -> Any:
        """The body of a 404 for ``path`` (OpenAI's error shape unless the API's differs)."""
        return {"error": {"message": path, "type": "not_found"}}

    def bind(self, handler: type[JsonHandler]) -> type[JsonHandler]:
        """A subclass of ``handler`` serving ``self`` (its :attr:`JsonHandler.fake`)."""
        return type(handler.__name__, (handler,), {"fake": self})

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class: :attr:`handler_type` bound to ``self``."""
        return self.bind(self.handler_type)

    def __enter__(self) -> Self:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
