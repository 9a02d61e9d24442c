"""Fixtures for the IDE integration tests: an isolated HOME with no IDE path overrides."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:  # the test helpers beside this file (ide_golden)
    sys.path.insert(0, _HERE)

#: every variable that moves an IDE file paxm edits
PATH_VARIABLES = (
    "PAXM_CURSOR_HOOKS",
    "PAXM_CURSOR_MCP",
    "PAXM_TRAE_HOOKS",
    "PAXM_TRAE_MCP",
    "PAXM_TRAE_CN_HOOKS",
    "PAXM_TRAE_CN_MCP",
    "PAXM_KIRO_AGENT",
    "PAXM_KIRO_MCP",
    "PAXM_ZCODE_CONFIG",
    "APPDATA",
)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME and the XDG dirs at a fresh temp dir so no test touches the real home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    for var in ("PAXM_CONFIG", "PAXM_LOAD_PLUGINS", "PAXM_RAISE_ERRORS", *PATH_VARIABLES):
        monkeypatch.delenv(var, raising=False)
    return home
