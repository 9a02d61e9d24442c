"""Fixtures: an isolated HOME per test, and one real openviking-server per session."""

from __future__ import annotations

import sys
from pathlib import Path

# autouse: no test touches the real home, no provider stays open; one fake OpenAI endpoint per session
from paxm_contracttest.fakes import close_built_providers, isolated_home, paxm_unset_env  # noqa: F401
from paxm_contracttest.servers import backend_fixture, fake_openai  # noqa: F401

sys.path.insert(0, str(Path(__file__).parent))
from ov_server import ROOT_KEY, OpenVikingServer  # noqa: E402

openviking = backend_fixture(
    "openviking", OpenVikingServer, "A dev-mode (no auth) openviking-server shared by the session."
)
openviking_keyed = backend_fixture(
    "openviking_keyed",
    lambda workdir, ai_url: OpenVikingServer(workdir, ai_url, root_api_key=ROOT_KEY),
    "An openviking-server with a root API key (tenant APIs need a user key).",
)
