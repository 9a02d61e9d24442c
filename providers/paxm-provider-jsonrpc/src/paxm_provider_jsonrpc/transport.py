"""JSON-RPC 2.0 over stdio, one plugin process per request (``docs/jsonrpc-provider-protocol.md``).

The plugin runs in its own process group, killed whole once one complete JSON object is read
from stdout; one ``selectors`` loop writes, reads and keeps stderr's tail, so the call honours
the timeout and the caller's deadline (a cancel included).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from paxm_core import Deadline, DeadlineExceeded, ProviderError
from paxm_core.duration import format_duration

__all__ = [
    "METHOD_NOT_FOUND",
    "MalformedResponse",
    "RpcError",
    "StdioTransport",
    "decode_response",
]

METHOD_NOT_FOUND = -32601
#: How much of the plugin's stderr is kept for error messages (the tail, as upstream).
STDERR_TAIL_BYTES = 4096
_POLL_SECONDS = 0.05


class RpcError(ProviderError):
    """The plugin answered with a JSON-RPC ``error`` object; ``code`` keeps its code."""

    def __init__(self, provider: str, op: str, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.data = data
        text = f"json-rpc error {code}: {message}" if message.strip() else f"json-rpc error {code}"
        super().__init__(provider, op, text)


class MalformedResponse(ValueError):
    """The bytes on stdout are not a valid JSON-RPC response to our request."""


# -- framing ---------------------------------------------------------------------------------

_OUTSIDE = re.compile(rb'[{}\[\]"]')
_INSIDE = re.compile(rb'["\\]')
_WS = b" \t\r\n"


class _ObjectScanner:
    """Finds where the first top-level JSON object on stdout ends, incrementally, in one linear
    pass however it is chunked (only brackets and string boundaries are tracked)."""

    def __init__(self) -> None:
        self.start = -1
        self.pos = 0
        self.depth = 0
        self.in_string = False

    def feed(self, buf: bytes | bytearray) -> int | None:
        """Return the end offset of the first object once it is complete, else ``None``."""
        if self.start < 0:
            stripped = len(buf) - len(bytes(buf).lstrip(_WS))
            if stripped == len(buf):
                return None
            if buf[stripped : stripped + 1] != b"{":
                raise MalformedResponse(f"expected a JSON object, output began {_preview(buf[stripped:])}")
            self.start = stripped
            self.pos = stripped
        n = len(buf)
        while self.pos < n:
            if self.in_string:
                match = _INSIDE.search(buf, self.pos)
                if match is None:
                    self.pos = n
                    return None
                if match.group() == b"\\":
                    if match.end() >= n:
                        self.pos = match.start()  # wait for the escaped byte
                        return None
                    self.pos = match.end() + 1
                    continue
                self.in_string = False
                self.pos = match.end()
                continue
            match = _OUTSIDE.search(buf, self.pos)
            if match is None:
                self.pos = n
                return None
            self.pos = match.end()
            char = match.group()
            if char == b'"':
                self.in_string = True
            elif char in (b"{", b"["):
                self.depth += 1
            else:
                self.depth -= 1
                if self.depth <= 0:
                    return self.pos
        return None


def _preview(data: bytes | bytearray, limit: int = 80) -> str:
    text = bytes(data[:limit]).decode("utf-8", "replace")
    return repr(text + ("…" if len(data) > limit else ""))


def _reject_constant(name: str) -> Any:
    raise MalformedResponse(f"{name} is not valid JSON")


def decode_response(raw: bytes, request_id: str) -> Any:
    """Validate one response frame for ``request_id`` and return its ``result``.

    :raises MalformedResponse: not JSON, not an object, wrong or missing id, or a bad error object.
    :raises _RemoteError: the frame carries a JSON-RPC ``error``.
    """
    try:
        text = raw.decode("utf-8")
        frame = json.loads(text, parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise MalformedResponse(f"response is not UTF-8: {exc}") from None
    except RecursionError:
        raise MalformedResponse("response nests too deeply") from None
    except ValueError as exc:
        raise MalformedResponse(f"response is not valid JSON: {exc}; output began {_preview(raw)}") from None
    if not isinstance(frame, dict):
        raise MalformedResponse(f"response must be a JSON object, got {type(frame).__name__}")
    got = frame.get("id")
    if not isinstance(got, str):
        raise MalformedResponse(f"response id must be the string {request_id!r}, got {json.dumps(got)[:60]}")
    if got != request_id:
        raise MalformedResponse(f"response id mismatch: got {got[:60]!r}, want {request_id!r}")
    error = frame.get("error")
    if error is not None:
        if not isinstance(error, dict):
            raise MalformedResponse("response error must be an object with code and message")
        code = error.get("code")
        message = error.get("message", "")
        if isinstance(code, bool) or not isinstance(code, int):
            if isinstance(code, float) and code.is_integer() and math.isfinite(code):
                code = int(code)
            else:
                raise MalformedResponse(f"response error code must be an integer, got {json.dumps(code)[:60]}")
        if not isinstance(message, str):
            message = json.dumps(message)[:200]
        raise _RemoteError(code, message, error.get("data"))
    return frame.get("result")


class _RemoteError(Exception):
    def __init__(self, code: int, message: str, data: Any) -> None:
        self.code = code
        self.message = message
        self.data = data
        super().__init__(message)


# -- process ---------------------------------------------------------------------------------


class StdioTransport:
    """Runs one plugin process per request; thread-safe (calls share the id counter and the
    set of plugin processes still running, which :meth:`close` kills)."""

    def __init__(
        self,
        provider: str,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        max_response_bytes: int = 32 * 1024 * 1024,
        *,
        secrets: Sequence[str] = (),
    ) -> None:
        self.provider = provider
        #: configured credential values, replaced by ``<redacted>`` in every error message
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # the id counter and _running
        # plugin processes still running; a call removes its own under the lock before reaping
        # it, so every pid in here is unreaped (never reused) while the lock is held
        self._running: set[subprocess.Popen[bytes]] = set()
        self._closed = False

    def close(self) -> None:
        """Kill every plugin process still running, with its group; calls in flight and later fail."""
        with self._lock:
            self._closed = True
            for proc in self._running:
                _signal_group(proc)
            self._running.clear()

    def call(self, method: str, params: Any, deadline: Deadline) -> Any:
        """Send one request and return the response's ``result`` (``None`` for ``null``).

        :raises RpcError: the plugin returned a JSON-RPC error.
        :raises ProviderError: it could not start, timed out, exited early, or answered garbage.
        :raises DeadlineExceeded: ``deadline`` was already over, or was cancelled mid-call.
        """
        deadline.check(method)
        if self._closed:
            raise self._fail(method, "provider closed")
        with self._lock:
            request_id = str(next(self._ids))
        payload = (
            json.dumps(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
                ensure_ascii=False,
                separators=(",", ":"),
            ).encode("utf-8")
            + b"\n"
        )
        budget = deadline.timeout(self.timeout)
        assert budget is not None  # capped by self.timeout
        raw, stderr = self._exchange(method, payload, budget, deadline)
        try:
            return decode_response(raw, request_id)
        except _RemoteError as exc:
            raise RpcError(self.provider, method, exc.code, self._redact(exc.message), exc.data) from None
        except MalformedResponse as exc:
            raise ProviderError(
                self.provider, method, self._redact(f"malformed response: {exc}{_stderr_suffix(stderr)}")
            ) from None

    def _redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "<redacted>")
        return text

    def _fail(
        self, method: str, message: str, stderr: bytes | bytearray = b"", *, retryable: bool = False
    ) -> ProviderError:
        return ProviderError(self.provider, method, self._redact(message + _stderr_suffix(stderr)), retryable=retryable)

    def _exchange(self, method: str, payload: bytes, budget: float, deadline: Deadline) -> tuple[bytes, bytes]:
        ends_at = time.monotonic() + budget
        proc = self._spawn(method)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        stdout = bytearray()
        stderr = bytearray()
        scanner = _ObjectScanner()
        selector = selectors.DefaultSelector()
        try:
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                os.set_blocking(pipe.fileno(), False)
            selector.register(proc.stdin, selectors.EVENT_WRITE)
            selector.register(proc.stdout, selectors.EVENT_READ)
            selector.register(proc.stderr, selectors.EVENT_READ)
            view = memoryview(payload)
            stdout_open = stderr_open = True
            while True:
                now = self._check_budget(method, deadline, ends_at, budget, stderr)
                if not stdout_open:
                    raise self._no_response(method, proc, selector, view, stdout, stderr, stderr_open, ends_at, now)
                for key, _ in selector.select(min(_POLL_SECONDS, ends_at - now)):
                    stream: object = key.fileobj
                    if stream is proc.stdin:
                        view = _write_request(proc, selector, view)
                        continue
                    try:
                        chunk = os.read(key.fd, 65536)
                    except BlockingIOError:
                        continue
                    if stream is proc.stderr:
                        stderr_open = _keep_stderr(proc, selector, chunk, stderr)
                        continue
                    if not chunk:
                        selector.unregister(proc.stdout)
                        stdout_open = False
                        continue
                    end = self._take_stdout(method, chunk, stdout, stderr, scanner)
                    if end is not None:
                        return bytes(stdout[scanner.start : end]), bytes(stderr)
        finally:
            selector.close()
            with self._lock:
                self._running.discard(proc)
            _kill_group(proc)

    def _spawn(self, method: str) -> subprocess.Popen[bytes]:
        """Start the plugin in a process group of its own, registered for :meth:`close`."""
        try:
            proc = subprocess.Popen(
                [self.command, *self.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, **self.env},
                start_new_session=True,  # its own process group, killed as a whole by _exchange
                close_fds=True,
            )
        except OSError as exc:
            raise self._fail(method, f"cannot start plugin command {self.command!r}: {exc.strerror or exc}") from None
        with self._lock:
            closing = self._closed
            if not closing:
                self._running.add(proc)
        if closing:  # closed while it started: close() could not see it
            _kill_group(proc)
            raise self._fail(method, "provider closed")
        return proc

    def _check_budget(self, method: str, deadline: Deadline, ends_at: float, budget: float, stderr: bytearray) -> float:
        """Raise when the call was cancelled, the provider closed or the budget ran out; else the time now."""
        if deadline.cancelled:
            raise DeadlineExceeded(f"{method} cancelled", cancelled=True)
        if self._closed:
            raise self._fail(method, "provider closed")
        now = time.monotonic()
        if now >= ends_at:
            raise self._fail(method, f"timed out after {format_duration(round(budget, 3))}", stderr, retryable=True)
        return now

    def _take_stdout(
        self, method: str, chunk: bytes, stdout: bytearray, stderr: bytearray, scanner: _ObjectScanner
    ) -> int | None:
        """Add ``chunk`` to the response; where its first object ends once complete, else ``None``."""
        stdout.extend(chunk)
        if len(stdout) > self.max_response_bytes:
            raise self._fail(method, f"response exceeds {self.max_response_bytes} bytes", stderr)
        try:
            return scanner.feed(stdout)
        except MalformedResponse as exc:
            raise self._fail(method, f"malformed response: {exc}", stderr) from None

    def _no_response(
        self,
        method: str,
        proc: subprocess.Popen[bytes],
        selector: selectors.BaseSelector,
        view: memoryview,
        stdout: bytearray,
        stderr: bytearray,
        stderr_open: bool,
        ends_at: float,
        now: float,
    ) -> ProviderError:
        """The error for a plugin that closed stdout before a complete object (the call ends at ``ends_at``)."""
        assert proc.stdin is not None
        if view:  # the plugin never read its request; stop offering it
            selector.unregister(proc.stdin)
        if stderr_open:
            # give stderr a moment to drain so the error can quote it
            self._drain(proc, selector, stderr, min(0.2, ends_at - now))
        try:  # the exit status makes the error clearer; don't wait long for it
            code: int | None = proc.wait(timeout=max(0.0, min(0.2, ends_at - time.monotonic())))
        except subprocess.TimeoutExpired:
            code = None
        status = f" (exit status {code})" if code is not None else ""
        if not stdout.strip():
            return self._fail(method, f"plugin closed stdout without a response{status}", stderr)
        return self._fail(
            method, f"malformed response: truncated JSON{status}; output began {_preview(stdout)}", stderr
        )

    @staticmethod
    def _drain(proc: subprocess.Popen[bytes], selector: selectors.BaseSelector, sink: bytearray, wait: float) -> None:
        ends = time.monotonic() + max(0.0, wait)
        while time.monotonic() < ends:
            for key, _ in selector.select(max(0.0, ends - time.monotonic())):
                if key.fileobj is not proc.stderr:
                    continue
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not _keep_stderr(proc, selector, chunk, sink):
                    return


def _write_request(proc: subprocess.Popen[bytes], selector: selectors.BaseSelector, view: memoryview) -> memoryview:
    """Write what the plugin's stdin takes of the request; closes stdin once all of it is written."""
    assert proc.stdin is not None
    try:
        written = os.write(proc.stdin.fileno(), view)
    except BlockingIOError:
        return view
    except (BrokenPipeError, OSError):
        # The plugin stopped reading; its answer (or silence) decides.
        written = len(view)
    view = view[written:]
    if not view:
        selector.unregister(proc.stdin)
        proc.stdin.close()
    return view


def _keep_stderr(
    proc: subprocess.Popen[bytes], selector: selectors.BaseSelector, chunk: bytes, tail: bytearray
) -> bool:
    """Keep the tail of the plugin's stderr; ``False`` once it has ended."""
    assert proc.stderr is not None
    if not chunk:
        selector.unregister(proc.stderr)
        return False
    tail.extend(chunk)
    del tail[:-STDERR_TAIL_BYTES]
    return True


def _signal_group(proc: subprocess.Popen[bytes]) -> None:
    # SIGKILL to the plugin's process group (its own session: see _spawn).  Never waits, so
    # close() may call it while the call's own thread still reads the pipes and reaps it.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    _signal_group(proc)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL not delivered
        proc.kill()
        proc.wait()


def _stderr_suffix(stderr: bytes | bytearray) -> str:
    text = bytes(stderr).decode("utf-8", "replace").strip()
    return f"; stderr: {text}" if text else ""
