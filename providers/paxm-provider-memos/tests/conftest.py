"""Fixtures: an isolated HOME per test, and one real MemOS product server per session."""

from __future__ import annotations

import sys
from pathlib import Path

# autouse: no test touches the real home, no provider stays open; one fake OpenAI endpoint per session
from paxm_contracttest.fakes import close_built_providers, isolated_home, paxm_unset_env  # noqa: F401
from paxm_contracttest.servers import backend_fixture, fake_openai  # noqa: F401

sys.path.insert(0, str(Path(__file__).parent))
from memos_server import MemOSServer  # noqa: E402

memos = backend_fixture("memos", MemOSServer, "The MemOS product server (and its Postgres) shared by the session.")
