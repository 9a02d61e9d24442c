"""Fixtures for the OpenCode integration tests (the root ``tests/conftest.py`` isolation, plus helpers).

Every test runs with HOME/XDG/PAXM_* pointed at a temp dir.  This directory is put on
``sys.path`` so the tests can import their helpers (``capture_fixtures`` ...) under
``--import-mode=importlib``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, XDG dirs and PAXM_* at a fresh temp dir so no test touches the real home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    for var in (
        "PAXM_CONFIG",
        "PAXM_LOAD_PLUGINS",
        "PAXM_RAISE_ERRORS",
        "PAXM_OPENCODE_CONFIG_DIR",
        "OPENCODE_CONFIG_DIR",
    ):
        monkeypatch.delenv(var, raising=False)
    return home
