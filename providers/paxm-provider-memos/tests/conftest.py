"""Fixtures: an isolated HOME per test, and one real MemOS product server per session."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)

sys.path.insert(0, str(Path(__file__).parent))
from memos_server import MemOSServer, start_fake_openai  # noqa: E402


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Variables a developer may have set that would reach these tests."""
    return ("PAXM_API_KEY",)


@pytest.fixture(scope="session")
def fake_openai(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc, url = start_fake_openai(tmp_path_factory.mktemp("fakeai"))
    yield url
    proc.stop(grace=5)


@pytest.fixture(scope="session")
def memos(tmp_path_factory: pytest.TempPathFactory, fake_openai: str) -> Iterator[MemOSServer]:
    """The MemOS product server (and its Postgres) shared by the session."""
    server = MemOSServer(tmp_path_factory.mktemp("memos"), fake_openai)
    yield server
    server.stop()
