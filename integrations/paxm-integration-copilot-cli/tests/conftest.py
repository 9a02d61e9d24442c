"""Fixtures for the Copilot CLI integration tests: an isolated HOME, and the test helper dirs on ``sys.path``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
_INTEGRATIONS = _HERE.parents[1]
# this directory, and the Claude Code and OpenCode test helpers (sandbox, fake Anthropic and OpenAI servers)
for _path in (
    _INTEGRATIONS / "paxm-integration-opencode" / "tests",
    _INTEGRATIONS / "paxm-integration-claude-code" / "tests",
    _HERE,
):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, XDG dirs and PAXM_* at a fresh temp dir so no test touches the real home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    for var in ("PAXM_CONFIG", "PAXM_LOAD_PLUGINS", "PAXM_RAISE_ERRORS", "PAXM_COPILOT_HOOKS", "COPILOT_HOME"):
        monkeypatch.delenv(var, raising=False)
    return home
