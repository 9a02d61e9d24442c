"""Fixtures for the Claude Code integration tests.

Every test runs with HOME/XDG/PAXM_* pointed at a temp dir; the test helpers are in the kit
(``paxm_contracttest``), the fake model APIs in ``paxm_contracttest.fake_models``.
"""

from __future__ import annotations

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Harness variables a developer may have set."""
    return ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PAXM_CLAUDE_SETTINGS")
