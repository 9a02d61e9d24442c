"""Fixtures for the IDE integration tests: an isolated HOME with no IDE path overrides."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)

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


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """The IDE path variables a developer may have set."""
    return PATH_VARIABLES
