"""Fixtures: an isolated HOME per test, the real Mem0 engine behind our REST shim, the Cloud fake."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from mem0_cloud_fake import Mem0CloudFake  # noqa: E402
from mem0_fixtures import Mem0Server, start_mem0_server, stop_mem0_server  # noqa: E402


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, XDG dirs and PAXM_* at a fresh temp dir so no test touches the real home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    for var in ("PAXM_CONFIG", "PAXM_LOAD_PLUGINS", "PAXM_RAISE_ERRORS", "MEM0_API_KEY", "PAXM_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home


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
