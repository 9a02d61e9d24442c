"""Core test fixtures.  Every test runs with HOME/XDG/PAXM_* pointed at a temp dir."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)
from tests._kit import ServeHttp


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Harness config-dir variables a developer may have set."""
    return ("CLAUDE_CONFIG_DIR", "CODEX_HOME")


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
