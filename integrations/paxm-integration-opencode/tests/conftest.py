"""Fixtures for the OpenCode integration tests: the kit's isolated HOME, without OpenCode's own variables."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:  # the test helpers beside this file, under --import-mode=importlib
    sys.path.insert(0, _HERE)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """OpenCode's variables a developer may have set."""
    return ("PAXM_OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_DIR")
