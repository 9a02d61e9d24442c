"""Fixtures: an isolated HOME per test, and one real openviking-server per session."""

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
from ov_server import ROOT_KEY, OpenVikingServer  # noqa: E402


@pytest.fixture(scope="session")
def openviking(tmp_path_factory: pytest.TempPathFactory, fake_openai: str) -> Iterator[OpenVikingServer]:  # noqa: F811
    """A dev-mode (no auth) openviking-server shared by the session."""
    server = OpenVikingServer(tmp_path_factory.mktemp("openviking"), fake_openai)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def openviking_keyed(tmp_path_factory: pytest.TempPathFactory, fake_openai: str) -> Iterator[OpenVikingServer]:  # noqa: F811
    """An openviking-server with a root API key (tenant APIs need a user key)."""
    server = OpenVikingServer(tmp_path_factory.mktemp("openviking-keyed"), fake_openai, root_api_key=ROOT_KEY)
    yield server
    server.stop()
