"""A real PostgreSQL server for the whole session; each test gets its own schema."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pgserver import APP_PASSWORD, PASSWORD_ENV, PgServer, find_bin_dir, start_server  # noqa: E402


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    bin_dir = find_bin_dir()
    if bin_dir is None:
        message = "PostgreSQL server binaries not found (apt-get install postgresql; or set PAXM_PG_BIN)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    server = start_server(bin_dir)
    os.environ[PASSWORD_ENV] = APP_PASSWORD
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def schema() -> str:
    return "t_" + uuid.uuid4().hex[:12]
