"""Fixtures: an isolated HOME per test, the real Mem0 engine behind our REST shim, the Cloud fake."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from paxm_contracttest.fakes import (  # noqa: F401  (autouse: no test touches the real home, no provider stays open)
    close_built_providers,
    isolated_home,
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from mem0_cloud_fake import Mem0CloudFake  # noqa: E402
from mem0_fixtures import Mem0Server, start_mem0_server, stop_mem0_server  # noqa: E402


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Variables a developer may have set that would reach these tests."""
    return ("MEM0_API_KEY",)


@pytest.fixture(scope="session")
def mem0_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mem0Server]:
    """One shim for the session (tests isolate themselves with a fresh user_id each)."""
    server = start_mem0_server(tmp_path_factory.mktemp("mem0-server"), api_key="m0-selfhosted-" + uuid.uuid4().hex)
    yield server
    stop_mem0_server(server)


@pytest.fixture
def cloud() -> Iterator[Mem0CloudFake]:
    fake = Mem0CloudFake()
    yield fake
    fake.close()
