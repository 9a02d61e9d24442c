"""The OpenViking provider passes the paxm contract suite against the real openviking-server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paxm_contracttest import ProviderContract
from paxm_core import ProviderConfig

sys.path.insert(0, str(Path(__file__).parent))
from ov_server import OpenVikingServer  # noqa: E402

# a real server from a cached venv: minutes on a cold cache
pytestmark = pytest.mark.slow


class TestOpenVikingContract(ProviderContract):
    provider_type = "openviking"
    # Spelled out so that losing one fails here (reads are immediate: put waits for indexing).
    expected_capabilities = frozenset({"put_batch", "delete", "close", "attribution", "turn_boundaries"})

    @pytest.fixture
    def paxm_provider_config(self, openviking: OpenVikingServer) -> ProviderConfig:
        return ProviderConfig(type="openviking", enabled=True, base_url=openviking.url)


class TestOpenVikingEvalDirContract(TestOpenVikingContract):
    """A dedicated ``paxm-eval-*`` directory: the same contract, plus eval-scope cleanup."""

    expected_capabilities = TestOpenVikingContract.expected_capabilities | {"eval_scope_cleanup"}

    @pytest.fixture
    def paxm_provider_config(self, openviking: OpenVikingServer) -> ProviderConfig:
        return ProviderConfig(
            type="openviking", enabled=True, base_url=openviking.url, extra={"memory_dir": "paxm-eval-contract"}
        )
