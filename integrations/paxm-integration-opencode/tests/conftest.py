"""Fixtures for the OpenCode integration tests: the kit's isolated HOME, without OpenCode's own variables."""

from __future__ import annotations

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """OpenCode's variables a developer may have set."""
    return ("PAXM_OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_DIR")
