"""Fixtures for the Pi integration tests: the kit's isolated HOME, without Pi's own variables."""

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
    """Pi's variables a developer may have set."""
    return ("PAXM_PI_AGENT_DIR", "PI_CODING_AGENT_DIR")
