"""Fixtures: an isolated HOME per test, and one real MemOS product server per session."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from memos_server import MemOSServer, start_fake_openai  # noqa: E402


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, XDG dirs and PAXM_* at a fresh temp dir so no test touches the real home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    for var in ("PAXM_CONFIG", "PAXM_LOAD_PLUGINS", "PAXM_RAISE_ERRORS", "PAXM_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home


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
