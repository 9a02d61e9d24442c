"""MCP over stdio: a small JSON-RPC 2.0 loop, newline-delimited, without the MCP SDK.

paxm's server needs only ``initialize``, ``ping``, ``tools/list``, ``tools/call`` and a few
notifications; importing the SDK (pydantic models, anyio) takes seconds, far over the 500 ms
budget for answering ``initialize`` cold.  The protocol rules:

* ``initialize`` answers with the client's ``protocolVersion`` when this server speaks it,
  else with the newest one it speaks (the client then decides); capabilities ``tools``;
* every request gets exactly one answer: a line that is not JSON gets ``-32700`` (parse
  error) and a batch (a JSON array), a non-object or a malformed request ``-32600`` (invalid
  request), with ``id: null`` when no id could be read; an unknown method ``-32601``, bad
  parameters ``-32602`` and an unexpected failure ``-32603``; the loop keeps serving;
* notifications (no ``id``) are never answered; a ``notifications/cancelled`` request's
  answer is dropped, as the specification asks; responses sent by the client are ignored;
* tool calls run in worker threads, so ``ping`` is answered while a call runs; when stdin
  closes, calls already in flight are finished and answered before the server exits (each
  is bounded by its own deadline);
* invalid UTF-8 is decoded with replacement and lone surrogates (``\\ud83d`` escapes) are
  replaced by U+FFFD in tool arguments and in every answer, so such a request is still answered.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import IO, TypeAlias

from paxm_core.api.json import JSONObject, JSONValue

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_VERSIONS",
    "RpcError",
    "StdioServer",
]

#: the protocol revisions reachable through the ``initialize`` handshake, oldest first
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class RpcError(Exception):
    """A JSON-RPC error answer: ``code``, ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: JSONValue = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


#: method -> handler(params) returning the result object; ``tools/call`` runs in a thread
Handler = Callable[[JSONObject], JSONObject]
#: a JSON-RPC request id (``None`` answers a request whose id could not be read)
RequestId: TypeAlias = str | int | None


def _valid_id(value: object) -> bool:
    return (isinstance(value, str) or isinstance(value, int)) and not isinstance(value, bool)


class StdioServer:
    """Serves ``handlers`` over newline-delimited JSON-RPC until its input ends.

    :param handlers: method name -> handler; a handler raises :class:`RpcError` to answer
        with an error.
    :param threaded: methods whose handler runs in a worker thread (the slow ones).
    :param output: the binary stream answers are written to (one JSON object per line).
    """

    def __init__(self, handlers: dict[str, Handler], *, threaded: Iterable[str], output: IO[bytes]) -> None:
        self._handlers = handlers
        self._threaded = frozenset(threaded)
        self._output = output
        self._write_lock = threading.Lock()
        self._state = threading.Lock()
        self._in_flight: dict[threading.Thread, RequestId] = {}  # worker -> the request id it answers
        self._cancelled: set[RequestId] = set()

    def serve(self, lines: Iterable[bytes]) -> None:
        """Answer every line of ``lines``; at its end, wait for the calls still running."""
        for raw in lines:
            self.handle_line(raw.decode("utf-8", "replace"))
        self.drain()

    def drain(self) -> None:
        """Wait until every call in flight has been answered."""
        while True:
            with self._state:
                running = next(iter(self._in_flight), None)
            if running is None:
                return
            running.join()

    def handle_line(self, line: str) -> None:
        """One line of input: a request, a notification, a client response, or garbage."""
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser goes
            self._send_error(None, PARSE_ERROR, "Parse error")
            return
        if isinstance(message, list):
            self._send_error(None, INVALID_REQUEST, "Invalid Request: batches are not supported")
            return
        if not isinstance(message, dict):
            self._send_error(None, INVALID_REQUEST, "Invalid Request: not a JSON object")
            return
        has_id = "id" in message
        request_id = message.get("id")
        if "method" not in message and ("result" in message or "error" in message):
            return  # a client's answer to a request this server never sends
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str) or (has_id and not _valid_id(request_id)):
            self._send_error(request_id if _valid_id(request_id) else None, INVALID_REQUEST, "Invalid Request")
            return
        params = message.get("params", {})
        if not has_id:
            self._notification(method, params)
            return
        if not isinstance(params, dict):
            self._send_error(request_id, INVALID_PARAMS, "Invalid request parameters")
            return
        if method in self._threaded:
            worker = threading.Thread(target=self._run, args=(request_id, method, params), daemon=True)
            with self._state:
                self._in_flight[worker] = request_id
            worker.start()
        else:
            self._run(request_id, method, params)

    def _notification(self, method: str, params: object) -> None:
        if method == "notifications/cancelled" and isinstance(params, dict):
            request_id = params.get("requestId")
            with self._state:
                if _valid_id(request_id) and request_id in self._in_flight.values():
                    self._cancelled.add(request_id)
        # notifications/initialized and any other notification need nothing

    def _run(self, request_id: RequestId, method: str, params: JSONObject) -> None:
        try:
            handler = self._handlers.get(method)
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, "Method not found", method)
            answer: JSONObject = {"jsonrpc": "2.0", "id": request_id, "result": handler(params)}
        except RpcError as exc:
            answer = _error(request_id, exc.code, exc.message, exc.data)
        except Exception as exc:  # a failing handler must never take the server down
            answer = _error(request_id, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}")
        with self._state:
            cancelled = request_id in self._cancelled
            self._cancelled.discard(request_id)
        try:
            if not cancelled:
                self._send(answer)
        finally:  # only once answered: drain() returns when this set is empty
            with self._state:
                self._in_flight.pop(threading.current_thread(), None)

    def _send_error(self, request_id: RequestId, code: int, message: str) -> None:
        self._send(_error(request_id, code, message))

    def _send(self, answer: JSONObject) -> None:
        from paxm_core.textsafe import scrub

        try:
            data = json.dumps(scrub(answer), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:  # a result JSON cannot carry (NaN ...)
            data = json.dumps(_error(answer.get("id"), INTERNAL_ERROR, f"Internal error: {exc}"))
        with self._write_lock:
            try:
                self._output.write(data.encode("utf-8") + b"\n")
                self._output.flush()
            except (ValueError, OSError):  # BrokenPipeError included
                pass  # the client is gone; the loop ends with its stdin


def _error(request_id: JSONValue, code: int, message: str, data: JSONValue = None) -> JSONObject:
    error: JSONObject = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
