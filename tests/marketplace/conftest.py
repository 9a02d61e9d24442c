"""Fixtures of the marketplace tests (helpers in ``marketplace_kit``, importable from here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from marketplace_kit import ROOT, TOOL_REQUIREMENTS  # noqa: E402


@pytest.fixture(scope="session")
def tool_venv() -> Path:
    """A venv holding this checkout's wheels, pip-installed once per test process."""
    from paxm_contracttest.servers import wheel_venv

    return wheel_venv(ROOT, TOOL_REQUIREMENTS)
