"""The self-hosted MemOS provider passes the paxm contract suite against the real product server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paxm_contracttest import ProviderContract
from paxm_core import ProviderConfig

sys.path.insert(0, str(Path(__file__).parent))
from memos_server import MemOSServer  # noqa: E402

# a real server from a cached venv: minutes on a cold cache
pytestmark = pytest.mark.slow


class TestMemOSContract(ProviderContract):
    @pytest.fixture
    def paxm_provider_type(self) -> str:
        return "memos"

    @pytest.fixture
    def paxm_provider_config(self, memos: MemOSServer) -> ProviderConfig:
        return ProviderConfig.of(type="memos", enabled=True, base_url=memos.url, user_id="todd", mem_cube_id="contract")

    @pytest.fixture
    def paxm_expected_capabilities(self) -> set[str]:
        # Spelled out so that losing one fails here; fast-mode writes are searchable on return.
        return {"put_batch", "delete", "close", "attribution"}


class TestMemOSEvalCubeContract(TestMemOSContract):
    """A dedicated ``paxm-eval-*`` cube: the same contract, plus eval-scope cleanup."""

    @pytest.fixture
    def paxm_provider_config(self, memos: MemOSServer) -> ProviderConfig:
        return ProviderConfig.of(
            type="memos", enabled=True, base_url=memos.url, user_id="todd", mem_cube_id="paxm-eval-contract"
        )

    @pytest.fixture
    def paxm_expected_capabilities(self) -> set[str]:
        return {"put_batch", "delete", "close", "attribution", "eval_scope_cleanup"}
