"""Fixtures shared by the core tests."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# the core tests' helper modules (``plugin_site``) are importable from here
_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

ServeHttp = Callable[[type[BaseHTTPRequestHandler]], str]


@pytest.fixture
def http_server() -> Iterator[ServeHttp]:
    """Start a real HTTP server on 127.0.0.1 for a handler class; returns its ``http://`` URL.

    Every server started through it is shut down when the test ends (after the fixtures that
    depend on this one have closed their clients).
    """
    servers: list[ThreadingHTTPServer] = []

    def serve(handler: type[BaseHTTPRequestHandler]) -> str:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield serve
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()
