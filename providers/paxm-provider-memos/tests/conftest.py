"""Fixtures: an isolated HOME per test, and one real MemOS product server per session."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from paxm_contracttest.fakes import (  # noqa: F401  (autouse: no test touches the real home, no provider stays open)
    close_built_providers,
    isolated_home,
    paxm_unset_env,
)
from paxm_contracttest.servers import fake_openai  # noqa: F401  (one fake OpenAI endpoint per session)

sys.path.insert(0, str(Path(__file__).parent))
from memos_server import MemOSServer  # noqa: E402


@pytest.fixture(scope="session")
def memos(tmp_path_factory: pytest.TempPathFactory, fake_openai: str) -> Iterator[MemOSServer]:  # noqa: F811
    """The MemOS product server (and its Postgres) shared by the session."""
    server = MemOSServer(tmp_path_factory.mktemp("memos"), fake_openai)
    yield server
    server.stop()
