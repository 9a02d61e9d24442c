"""An ``httpx`` transport over the standard library's ``http.client``, for plain-HTTP servers.

httpx's own transport is httpcore (with h11), which ``httpx.Client`` imports when it is built:
about 16 ms of CPU and two dozen modules at every hook-daemon start that has an HTTP provider,
on the path of the first prompt's answer (``benchmarks/hook_bench.py``).  httpx itself already
imports ``http.client`` (through ``urllib.request`` in its auth module), so a transport built on
it costs nothing more to import.  :func:`paxm_core.http_client.new_client` uses it for
``http://`` servers (self-hosted memory servers, usually on 127.0.0.1); ``https://`` servers and
proxies keep httpcore, whose TLS and proxy handling this module does not try to match.

What it keeps of httpcore's behaviour: HTTP/1.1 keep-alive with a pool per origin, idle
connections dropped after :data:`KEEPALIVE_EXPIRY` seconds (httpx's default) or when the server
has closed them, each phase bounded by the request's own ``timeout`` extension, and the errors
mapped to httpx's (``ConnectError``, ``ConnectTimeout``, ``ReadTimeout``, ``WriteTimeout``,
``ReadError``, ``WriteError``, ``RemoteProtocolError``), so callers that catch
``httpx.TimeoutException`` and ``httpx.TransportError`` see no difference.  Response bodies are
read whole (JSON APIs), and ``Content-Encoding`` is decoded by ``httpx.Response`` as usual.
"""

from __future__ import annotations

import http.client
import select
import ssl
import threading
import time
from typing import TYPE_CHECKING

from paxm_core.http_client import httpx

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["KEEPALIVE_EXPIRY", "MAX_IDLE_PER_ORIGIN", "StdlibTransport"]

#: Seconds an idle connection is kept for reuse (httpx's default ``keepalive_expiry``).
KEEPALIVE_EXPIRY = 5.0
#: Idle connections kept per origin (httpx's default ``max_keepalive_connections``).
MAX_IDLE_PER_ORIGIN = 20

_Origin = tuple[str, str, int]
_Connection = http.client.HTTPConnection


class StdlibTransport(httpx.BaseTransport):
    """Sends each request on a pooled ``http.client`` connection (see the module docstring).

    :param ssl_context: used for an ``https://`` request that reaches this transport anyway
        (a redirect followed on purpose, say); :func:`~paxm_core.http_client.new_client` passes
        its context that trusts no CA, so such a request fails verification.

    Thread-safe: a connection is used by one request at a time; the pool is locked.
    """

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl_context = ssl_context
        self._idle: dict[_Origin, list[tuple[_Connection, float]]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return its response, body read."""
        scheme = request.url.scheme
        if scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {scheme!r}", request=request)
        if self._closed:
            raise RuntimeError("the transport is closed")
        timeouts: Mapping[str, float | None] = request.extensions.get("timeout", {})
        host = request.url.raw_host.decode("ascii")  # IDNA-encoded; IPv6 without brackets
        port = request.url.port or (443 if scheme == "https" else 80)
        origin = (scheme, host, port)
        body = request.read()
        target = request.url.raw_path.decode("ascii")
        conn = self._checkout(origin)
        if conn is None:
            conn = self._connect(origin, timeouts.get("connect"), request)
        try:
            return self._exchange(origin, conn, request, target, body, timeouts)
        except BaseException:
            conn.close()
            raise

    def _exchange(
        self,
        origin: _Origin,
        conn: _Connection,
        request: httpx.Request,
        target: str,
        body: bytes,
        timeouts: Mapping[str, float | None],
    ) -> httpx.Response:
        sock = conn.sock
        assert sock is not None  # connected by _connect or kept connected in the pool
        try:
            sock.settimeout(timeouts.get("write"))
            # httpx has set Host, Content-Length and Accept-Encoding already.
            conn.putrequest(request.method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in request.headers.raw:
                conn.putheader(name, value)
            conn.endheaders(body or None)
        except TimeoutError as exc:
            raise httpx.WriteTimeout(str(exc) or "timed out sending the request", request=request) from exc
        except OSError as exc:
            raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc
        try:
            sock.settimeout(timeouts.get("read"))
            raw = conn.getresponse()
            content = raw.read()
        except TimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "timed out reading the response", request=request) from exc
        except http.client.HTTPException as exc:  # RemoteDisconnected, BadStatusLine, IncompleteRead, ...
            raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request) from exc
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
        headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in raw.getheaders()]
        version = b"HTTP/1.0" if raw.version == 10 else b"HTTP/1.1"
        reason = (raw.reason or "").encode("ascii", "replace")
        if raw.will_close:
            conn.close()
        else:
            self._checkin(origin, conn)
        return httpx.Response(
            raw.status,
            headers=headers,
            stream=httpx.ByteStream(content),
            extensions={"http_version": version, "reason_phrase": reason},
            request=request,
        )

    def _connect(self, origin: _Origin, timeout: float | None, request: httpx.Request) -> _Connection:
        scheme, host, port = origin
        conn: _Connection
        if scheme == "https":
            context = self._ssl_context or ssl.create_default_context()
            conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.connect()
        except TimeoutError as exc:
            conn.close()
            raise httpx.ConnectTimeout(str(exc) or "timed out connecting", request=request) from exc
        except OSError as exc:  # refused, unreachable, unknown host, TLS verification
            conn.close()
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        return conn

    def _checkout(self, origin: _Origin) -> _Connection | None:
        """An idle connection to ``origin`` the server has not closed, or ``None``."""
        now = time.monotonic()
        while True:
            with self._lock:
                idle = self._idle.get(origin)
                if not idle:
                    return None
                conn, since = idle.pop()
            if now - since <= KEEPALIVE_EXPIRY and _still_open(conn):
                return conn
            conn.close()

    def _checkin(self, origin: _Origin, conn: _Connection) -> None:
        with self._lock:
            if not self._closed:
                idle = self._idle.setdefault(origin, [])
                if len(idle) < MAX_IDLE_PER_ORIGIN:
                    idle.append((conn, time.monotonic()))
                    return
        conn.close()

    def close(self) -> None:
        """Close every idle connection; later requests fail, connections in use close when done."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for conn, _ in connections:
                conn.close()


def _still_open(conn: _Connection) -> bool:
    # An idle HTTP/1.1 connection has nothing to read: readable means the server closed it
    # (or sent something unasked), so it must not carry the next request.
    sock = conn.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable
