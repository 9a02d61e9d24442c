"""Fixtures for the Codex integration tests: the kit's isolated HOME, without Codex's own variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Codex's variables a developer may have set."""
    return ("CODEX_HOME", "PAXM_CODEX_CONFIG", "PAXM_CODEX_BINARY")


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file that is not paxm's (mode 0644): the target of a link another process plants in paxm's way."""
    path = tmp_path / "victim"
    path.write_text("not paxm's\n")
    path.chmod(0o644)
    return path
