"""Fixtures for the Qwen Code integration tests: the kit's isolated HOME, without Qwen Code's own variables."""

from __future__ import annotations

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Qwen Code's variables a developer may have set."""
    return ("PAXM_QWEN_SETTINGS", "QWEN_HOME")
