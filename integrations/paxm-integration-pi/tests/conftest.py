"""Fixtures for the Pi integration tests: the kit's isolated HOME, without Pi's own variables."""

from __future__ import annotations

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Pi's variables a developer may have set."""
    return ("PAXM_PI_AGENT_DIR", "PI_CODING_AGENT_DIR")
