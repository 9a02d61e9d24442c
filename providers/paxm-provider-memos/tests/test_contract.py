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
    provider_type = "memos"
    # Spelled out so that losing one fails here; fast-mode writes are searchable on return.
    expected_capabilities = frozenset({"put_batch", "delete", "close", "attribution"})
    #: the cube the memories go to; a ``paxm-eval-*`` one adds eval-scope cleanup
    cube = "contract"

    @pytest.fixture
    def paxm_provider_config(self, memos: MemOSServer) -> ProviderConfig:
        return ProviderConfig.of(type="memos", enabled=True, base_url=memos.url, user_id="todd", mem_cube_id=self.cube)


class TestMemOSEvalCubeContract(TestMemOSContract):
    """A dedicated ``paxm-eval-*`` cube: the same contract, plus eval-scope cleanup."""

    expected_capabilities = TestMemOSContract.expected_capabilities | {"eval_scope_cleanup"}
    cube = "paxm-eval-contract"
