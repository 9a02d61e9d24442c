"""``paxm_core.http_transport``: httpx over ``http.client`` for plain-HTTP memory servers.

Every test talks to a real server on 127.0.0.1: ``http.server`` where HTTP/1.1 is enough, a raw
socket server where the test needs to misbehave (close a kept-alive connection, stall, cut a
body short).  The same exchanges are also checked against httpx's own transport (httpcore), so
a caller sees the same requests, responses and exception classes through either.
"""

from __future__ import annotations

import gzip
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import http_transport
from paxm_core.http_client import httpx, new_client
from paxm_core.http_transport import StdlibTransport

#: the ``http_server`` fixture (tests/core/conftest.py)
ServeHttp = Callable[[type[BaseHTTPRequestHandler]], str]


class _Echo(BaseHTTPRequestHandler):
    """Answers with what it received; counts the connections it served."""

    protocol_version = "HTTP/1.1"  # keep-alive
    connections: list[tuple[str, int]] = []
    seen: list[dict[str, Any]] = []

    def setup(self) -> None:
        super().setup()
        type(self).connections.append(self.client_address)

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        record = {
            "method": self.command,
            "path": self.path,
            "headers": [(k.lower(), v) for k, v in self.headers.items()],
            "body": body.decode("latin-1"),
        }
        type(self).seen.append(record)
        if self.path.startswith("/gzip"):
            payload = gzip.compress(json.dumps({"zipped": True}).encode())
            extra = [("Content-Encoding", "gzip")]
        elif self.path.startswith("/status/"):
            payload = b'{"status": "as asked"}'
            extra = []
        else:
            payload = json.dumps(record).encode()
            extra = []
        status = int(self.path.split("/")[2]) if self.path.startswith("/status/") else 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in extra:
            self.send_header(name, value)
        if self.path.startswith("/chunked"):
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for start in range(0, len(payload), 7):
                piece = payload[start : start + 7]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(payload)))
        if self.path.startswith("/close"):
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def echo(http_server: ServeHttp) -> str:
    _Echo.connections = []
    _Echo.seen = []
    return http_server(_Echo)


class _Raw:
    """A socket server whose every connection is handled by ``behave(conn)``."""

    def __init__(self, behave: Callable[[socket.socket], None]) -> None:
        self.behave = behave
        self.accepted = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                self.behave(conn)
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        rest += conn.recv(65536)
    return head


def _ok(body: bytes = b'{"ok": true}', *, close: bool = False) -> bytes:
    connection = b"Connection: close\r\n" if close else b""
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), connection, body)


def _client(url: str, transport: httpx.BaseTransport | None = None) -> httpx.Client:
    options: dict[str, Any] = {"base_url": url, "trust_env": False, "timeout": 5.0}
    if transport is not None:
        options["transport"] = transport
    return new_client(url, **options)


def test_new_client_uses_it_for_plain_http_only() -> None:
    with new_client("http://127.0.0.1:9") as plain, new_client("https://memory.example") as tls:
        assert isinstance(plain._transport, StdlibTransport)
        assert not isinstance(tls._transport, StdlibTransport)


def test_requests_arrive_as_sent_and_one_connection_carries_them(echo: str) -> None:
    with _client(echo) as client:
        first = client.post("/v1/search?q=a+b&n=1", json={"query": "déploy ✓"}, headers={"X-Key": "k1"})
        second = client.get("/v1/list", params={"user": "alice"})
        client.delete("/v1/memory/7")
    assert first.status_code == 200 and second.status_code == 200
    got = first.json()
    assert got["method"] == "POST" and got["path"] == "/v1/search?q=a+b&n=1"
    assert json.loads(got["body"].encode("latin-1")) == {"query": "déploy ✓"}
    headers = got["headers"]
    assert ["x-key", "k1"] in headers and ["content-type", "application/json"] in headers
    assert [name for name, _ in headers].count("host") == 1
    assert second.json()["path"] == "/v1/list?user=alice"
    assert len(_Echo.connections) == 1  # kept alive across all three
    assert [r["method"] for r in _Echo.seen] == ["POST", "GET", "DELETE"]


def test_chunked_and_gzip_bodies_are_decoded(echo: str) -> None:
    with _client(echo) as client:
        assert client.get("/chunked").json()["path"] == "/chunked"
        zipped = client.get("/gzip")
        assert zipped.headers["content-encoding"] == "gzip" and zipped.json() == {"zipped": True}
        assert client.head("/x").content == b""
        assert client.get("/after-head").json()["path"] == "/after-head"  # the connection is still good
    assert len(_Echo.connections) == 1


def test_error_statuses_are_responses_with_their_reason(echo: str) -> None:
    with _client(echo) as client:
        resp = client.get("/status/503")
    assert resp.status_code == 503 and resp.reason_phrase == "Service Unavailable"
    assert resp.http_version == "HTTP/1.1"
    with pytest.raises(httpx.HTTPStatusError):
        resp.raise_for_status()


def test_connection_close_is_honoured(echo: str) -> None:
    transport = StdlibTransport()
    with _client(echo, transport) as client:
        client.get("/close")
        assert not any(transport._idle.values())  # never pooled, not merely found dead later
        client.get("/next")
        assert sum(len(idle) for idle in transport._idle.values()) == 1
    assert len(_Echo.connections) == 2


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    # Each connection answers one request without "Connection: close", then hangs up: the
    # pooled connection is dead by the time the next request wants it.
    def once(conn: socket.socket) -> None:
        _read_request(conn)
        conn.sendall(_ok())

    server = _Raw(once)
    try:
        with _client(server.url) as client:
            for _ in range(3):
                assert client.get("/x").json() == {"ok": True}
                time.sleep(0.05)  # let the FIN arrive
        assert server.accepted == 3
    finally:
        server.close()


def test_idle_connections_expire(echo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_transport, "KEEPALIVE_EXPIRY", 0.0)
    with _client(echo) as client:
        client.get("/a")
        time.sleep(0.01)
        client.get("/b")
    assert len(_Echo.connections) == 2


def test_a_refused_connection_is_a_connect_error() -> None:
    with _client("http://127.0.0.1:9") as client, pytest.raises(httpx.ConnectError):
        client.get("/x")


def test_a_server_that_never_answers_is_a_read_timeout() -> None:
    stop = threading.Event()

    def stall(conn: socket.socket) -> None:
        _read_request(conn)
        stop.wait(30)

    server = _Raw(stall)
    try:
        with _client(server.url) as client:
            started = time.monotonic()
            with pytest.raises(httpx.ReadTimeout):
                client.get("/x", timeout=0.3)
            assert time.monotonic() - started < 3
    finally:
        stop.set()
        server.close()


def test_a_body_cut_short_is_a_protocol_error_and_the_connection_is_dropped() -> None:
    calls: list[int] = []

    def cut(conn: socket.socket) -> None:
        _read_request(conn)
        calls.append(1)
        if len(calls) == 1:
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial')
            return  # hang up mid-body
        conn.sendall(_ok())

    server = _Raw(cut)
    try:
        with _client(server.url) as client:
            with pytest.raises(httpx.RemoteProtocolError):
                client.get("/x")
            assert client.get("/x").json() == {"ok": True}
        assert server.accepted == 2
    finally:
        server.close()


def test_garbage_instead_of_http_is_a_protocol_error() -> None:
    def garbage(conn: socket.socket) -> None:
        _read_request(conn)
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

    server = _Raw(garbage)
    try:
        with _client(server.url) as client, pytest.raises(httpx.RemoteProtocolError):
            client.get("/x")
    finally:
        server.close()


def test_https_that_reaches_it_fails_verification_instead_of_trusting_anything() -> None:
    # new_client's context for a plain-HTTP server trusts no CA: a TLS handshake (here with a
    # server that is not TLS at all) can only fail, as a ConnectError.
    def plain(conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(_ok(close=True))

    server = _Raw(plain)
    try:
        url = server.url.replace("http://", "https://")
        transport = StdlibTransport(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
        with httpx.Client(transport=transport, trust_env=False) as client, pytest.raises(httpx.ConnectError):
            client.get(url + "/x", timeout=3)
    finally:
        server.close()


def test_threads_share_the_pool_without_sharing_a_connection(echo: str) -> None:
    errors: list[BaseException] = []
    with _client(echo) as client:

        def work(n: int) -> None:
            try:
                for i in range(15):
                    got = client.post(f"/t{n}/{i}", json={"n": n, "i": i}).json()
                    assert got["path"] == f"/t{n}/{i}" and json.loads(got["body"]) == {"n": n, "i": i}
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert not errors, errors[:1]
    assert len(_Echo.seen) == 90
    assert len(_Echo.connections) <= 6  # each thread's connection was reused, never shared


def test_close_closes_idle_connections_and_refuses_more(echo: str) -> None:
    transport = StdlibTransport()
    client = _client(echo, transport)
    client.get("/x")
    idle = [conn for conns in transport._idle.values() for conn, _ in conns]
    assert len(idle) == 1
    client.close()
    assert idle[0].sock is None
    with pytest.raises(RuntimeError):
        transport.handle_request(httpx.Request("GET", echo + "/y"))


def test_ipv6_loopback_works_when_the_machine_has_it() -> None:
    try:
        sock = socket.create_server(("::1", 0), family=socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")  # a property of the box, not of paxm
    port = sock.getsockname()[1]

    def serve() -> None:
        conn, _ = sock.accept()
        with conn:
            _read_request(conn)
            conn.sendall(_ok(close=True))

    threading.Thread(target=serve, daemon=True).start()
    try:
        with _client(f"http://[::1]:{port}") as client:
            assert client.get("/x").json() == {"ok": True}
    finally:
        sock.close()


def test_an_unsupported_scheme_is_refused() -> None:
    with pytest.raises(httpx.UnsupportedProtocol):
        StdlibTransport().handle_request(httpx.Request("GET", "ftp://127.0.0.1/x"))


_header_value = (
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E, blacklist_characters=":"), min_size=1, max_size=40)
    .map(str.strip)
    .filter(bool)
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=50),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
        max_leaves=20,
    ),
    header=_header_value,
    query=st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=12), max_size=3),
)
def test_what_the_server_receives_matches_httpx_own_transport(echo: str, body: Any, header: str, query: Any) -> None:
    """Differential: the same request through httpcore and through http.client arrives the same."""
    received = []
    for transport in (httpx.HTTPTransport(), StdlibTransport()):
        with _client(echo, transport) as client:
            resp = client.post("/same", json=body, params=query, headers={"X-Probe": header})
            got = resp.json()
            got["headers"] = sorted(got["headers"])
            received.append((resp.status_code, got))
    assert received[0] == received[1]
