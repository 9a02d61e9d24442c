"""Fixtures for the Cline integration tests: the kit's isolated HOME, without Cline's own variables."""

from __future__ import annotations

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Cline's variables a developer may have set."""
    return ("PAXM_CLINE_PLUGINS_DIR", "PAXM_CLINE_HOOKS_DIR", "CLINE_HOOKS_DIR", "CLINE_DIR")
