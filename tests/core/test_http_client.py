"""``paxm_core.http_client``: what the HTTP providers build their clients with."""

from __future__ import annotations

import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from paxm_core.http_client import httpx, new_client


class _Answer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_plain_http_client_talks_to_its_server(server: str) -> None:
    with new_client(server, base_url=server, trust_env=False) as client:
        assert client.get("/x").json() == {"ok": True}


def _verify_context(client: httpx.Client) -> ssl.SSLContext:
    pool = client._transport._pool  # type: ignore[attr-defined]
    context = pool._ssl_context
    assert isinstance(context, ssl.SSLContext)
    return context


def test_plain_http_gets_a_tls_context_that_trusts_no_ca_and_still_verifies() -> None:
    with new_client("http://127.0.0.1:9") as client:
        context = _verify_context(client)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0  # certifi's bundle was never loaded


def test_https_keeps_httpx_default_verification() -> None:
    with new_client("https://memory.example", base_url="https://memory.example") as client:
        context = _verify_context(client)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.cert_store_stats()["x509_ca"] > 0


def test_an_explicit_verify_option_wins() -> None:
    custom = ssl.create_default_context()
    with new_client("http://127.0.0.1:9", verify=custom) as client:
        assert _verify_context(client) is custom


def test_the_httpx_cli_stays_importable_after_paxm_imported_httpx() -> None:
    code = (
        "import sys, paxm_core.http_client; assert 'click' not in sys.modules;"
        " assert 'httpx._main' not in sys.modules or sys.modules['httpx._main'] is not None;"
        " import importlib.util; print(importlib.util.find_spec('httpx._main') is not None)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
