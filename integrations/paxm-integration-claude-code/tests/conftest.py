"""Fixtures for the Claude Code integration tests (a copy of the root ``tests/conftest.py``).

Every test runs with HOME/XDG/PAXM_* pointed at a temp dir.  This directory is put on
``sys.path`` so the tests can import their helpers (none left: the kit holds them)
under ``--import-mode=importlib``; the fake model APIs are ``paxm_contracttest.fake_models``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


from paxm_contracttest.fakes import isolated_home  # noqa: E402,F401  (autouse: no test touches the real home)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Harness variables a developer may have set."""
    return ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PAXM_CLAUDE_SETTINGS")
