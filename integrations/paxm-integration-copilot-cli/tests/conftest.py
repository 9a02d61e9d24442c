"""Fixtures for the Copilot CLI integration tests: the kit's isolated HOME, without Copilot CLI's own variables."""

from __future__ import annotations

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Copilot CLI's variables a developer may have set."""
    return ("PAXM_COPILOT_HOOKS", "COPILOT_HOME")
