"""Fixtures: HOME/XDG/PAXM_* pointed at a temp dir for every test, and the local Zep v4 server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paxm_contracttest.fakes import isolated_home  # noqa: F401  (autouse: no test touches the real home)
from paxm_contracttest.servers import closing_fixture

sys.path.insert(0, str(Path(__file__).parent))
from zep_fake import ZepFake  # noqa: E402

zep = closing_fixture("zep", ZepFake, "A fresh local Zep v4 server (the recording fake the real SDK talks to).")


@pytest.fixture
def paxm_unset_env() -> tuple[str, ...]:
    """Harness variables a developer may have set."""
    return ("CLAUDE_CONFIG_DIR", "CODEX_HOME")
