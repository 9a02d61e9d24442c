"""Fixtures for the Gemini CLI integration tests: the kit's isolated HOME, without Gemini CLI's own variables."""

from __future__ import annotations

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Gemini CLI's variables a developer may have set."""
    return ("PAXM_GEMINI_SETTINGS", "GEMINI_CLI_HOME")
