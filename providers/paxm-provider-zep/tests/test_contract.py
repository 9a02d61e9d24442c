"""The Zep provider passes the paxm contract suite through the real SDK against the local v4 server."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from zep_fake import ZepFake

from paxm_contracttest import ProviderContract
from paxm_core import ProviderConfig


class TestZepContract(ProviderContract):
    provider_type = "zep"
    # Spelled out (not read from the registration) so that losing one fails here. A user graph
    # refuses eval-scope cleanup by design; the subclass below checks it on a paxm-eval graph.
    expected_capabilities = frozenset({"put_batch", "delete", "close", "attribution"})
    #: where the memories go: the user's graph, or a named graph in ``extra``
    target: ClassVar[dict[str, Any]] = {"user_id": "todd"}

    @pytest.fixture
    def paxm_provider_config(self, zep: ZepFake) -> ProviderConfig:
        return ProviderConfig(type="zep", enabled=True, api_key=zep.state.api_key, base_url=zep.base_url, **self.target)


class TestZepEvalGraphContract(TestZepContract):
    """A dedicated ``paxm-eval-*`` named graph: the same contract, plus working eval-scope cleanup."""

    expected_capabilities = TestZepContract.expected_capabilities | {"eval_scope_cleanup"}
    target = {"extra": {"graph_id": "paxm-eval-contract"}}
