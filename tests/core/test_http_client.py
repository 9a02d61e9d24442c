"""``paxm_core.http_client``: what the HTTP providers build their clients with."""

from __future__ import annotations

import ssl
import subprocess
import sys
from collections.abc import Iterator

import pytest

from paxm_core import Deadline, DeadlineExceeded, ProviderError
from paxm_core.http_client import JsonTransport, redact, status_error
from tests._kit import QuietHandler, ServeHttp

#: the ``http_server`` fixture (tests/core/conftest.py)


SECRET = "sk-test-0123456789"

#: path -> (status, body) the scripted server answers
_SCRIPT: dict[str, tuple[int, bytes]] = {
    "/ok": (200, b'{"answer": 42}'),
    "/empty": (204, b""),
    "/text": (200, b"<html>proxy says hi</html>"),
    "/auth": (401, b'{"why": "bad key ' + SECRET.encode() + b'"}'),
    "/busy": (503, b"try later"),
    "/gone": (404, b'{"why": "no such thing"}'),
}


class _Scripted(QuietHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.reply(*_SCRIPT.get(self.path.split("?")[0], (500, b"")))

    do_GET = do_POST


class _Why(JsonTransport):
    def detail(self, payload: object) -> str:
        return str(payload.get("why", "")) if isinstance(payload, dict) else ""


@pytest.fixture
def transport(http_server: ServeHttp) -> Iterator[_Why]:
    url = http_server(_Scripted) + "/"
    client = _Why("mine", url, {"X-Key": SECRET}, SECRET, 5.0, service="Store", label="store")
    try:
        yield client
    finally:
        client.close()


def _error(transport: _Why, path: str) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        transport.call("op", "POST", path, Deadline.after(5.0), {"q": 1})
    return info.value


def test_redact_hides_the_secret_collapses_space_and_cuts() -> None:
    assert redact(f"key  {SECRET}\n end", SECRET) == "key <redacted> end"
    assert redact("x" * 400, "") == "x" * 300
    assert redact("abcdef", "", limit=3) == "abc"


def test_json_transport_decodes_bodies_and_passes_a_good_status(transport: _Why) -> None:
    assert transport.call("op", "POST", "/ok", Deadline.after(5.0), {"q": 1}) == {"answer": 42}
    assert transport.call("op", "GET", "/empty", Deadline.after(5.0), params={"a": "b"}) is None


def test_json_transport_maps_statuses_and_never_shows_the_secret(transport: _Why) -> None:
    auth = _error(transport, "/auth")
    assert "authentication failed (HTTP 401, POST /auth); check api_key: bad key <redacted>" in str(auth)
    assert SECRET not in str(auth) and not auth.retryable
    busy = _error(transport, "/busy")
    assert "Store server error (HTTP 503, POST /busy): try later" in str(busy) and busy.retryable
    gone = _error(transport, "/gone")
    assert "not found (HTTP 404, POST /gone): no such thing" in str(gone) and not gone.retryable
    text = _error(transport, "/text")
    assert "Store returned a body that is not JSON" in str(text)


def test_json_transport_unreachable_expired_and_closed(transport: _Why) -> None:
    with pytest.raises(DeadlineExceeded, match="store op"):
        transport.call("op", "GET", "/ok", Deadline.after(0.0))
    dead = JsonTransport("mine", "http://127.0.0.1:9", {}, "", 5.0, service="Store", label="store")
    with pytest.raises(ProviderError, match="cannot reach Store at http://127.0.0.1:9") as info:
        dead.call("op", "GET", "/ok", Deadline.after(5.0))
    assert info.value.retryable
    transport.close()
    with pytest.raises(ProviderError, match="provider is closed"):
        transport.call("op", "GET", "/ok", Deadline.after(5.0))


@pytest.mark.parametrize(
    ("status", "message", "retryable"),
    [
        (400, "Store rejected the request (HTTP 400, POST /x): why", False),
        (401, "authentication failed (HTTP 401, POST /x); check the key: why", False),
        (404, "not found (HTTP 404, POST /x): why", False),
        (409, "conflict (HTTP 409, POST /x): why", False),
        (422, "Store could not process the request (HTTP 422, POST /x): why", False),
        (429, "rate limited by Store (HTTP 429, POST /x); retry later: why", True),
        (502, "Store server error (HTTP 502, POST /x): why", True),
        (418, "unexpected HTTP 418 (POST /x): why", False),
    ],
)
def test_status_error_is_one_table_for_every_remote_provider(status: int, message: str, retryable: bool) -> None:
    error = status_error("p", "op", status, "why", service="Store", where="POST /x", auth_hint="check the key")
    assert str(error) == f"p op: {message}" and error.retryable is retryable
    assert (error.status, error.server_detail) == (status, "why")


def test_call_returns_the_unwrapped_body_or_none_for_an_allowed_404(transport: _Why) -> None:
    assert transport.call("op", "POST", "/ok", Deadline.after(5.0), {"q": 1}) == {"answer": 42}
    assert transport.call("op", "POST", "/gone", Deadline.after(5.0), missing_ok=True) is None
    with pytest.raises(ProviderError, match=r"op: not found \(HTTP 404, POST /gone\): no such thing"):
        transport.call("op", "POST", "/gone", Deadline.after(5.0))

    class Enveloped(_Why):
        def unwrap(self, op: str, payload: object) -> object:
            raise self.fail(op, f"refused {payload}")

    enveloped = Enveloped("mine", transport._base, {}, SECRET, 5.0, service="Store", label="store")
    try:
        with pytest.raises(ProviderError, match="refused {'answer': 42}"):
            enveloped.call("op", "GET", "/ok", Deadline.after(5.0))
    finally:
        enveloped.close()


def _verify_context(transport: JsonTransport) -> ssl.SSLContext:
    context = transport._client._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert isinstance(context, ssl.SSLContext)
    return context


def _transport(url: str) -> JsonTransport:
    return JsonTransport("mine", url, {}, "", 5.0, service="Store", label="store")


def test_plain_http_gets_a_tls_context_that_trusts_no_ca_and_still_verifies() -> None:
    transport = _transport("http://127.0.0.1:9")
    context = _verify_context(transport)
    transport.close()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0  # certifi's bundle was never loaded


def test_https_keeps_httpx_default_verification() -> None:
    transport = _transport("https://memory.example")
    context = _verify_context(transport)
    transport.close()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.cert_store_stats()["x509_ca"] > 0


def test_the_httpx_cli_is_not_imported_and_stays_importable() -> None:
    code = (
        "import sys, paxm_core.http_client; assert 'click' not in sys.modules;"
        " assert 'httpx._main' not in sys.modules or sys.modules['httpx._main'] is not None;"
        " import importlib.util; print(importlib.util.find_spec('httpx._main') is not None)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
