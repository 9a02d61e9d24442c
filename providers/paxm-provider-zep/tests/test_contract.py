"""The Zep provider passes the paxm contract suite through the real SDK against the local v4 server."""

from __future__ import annotations

import pytest
from zep_fake import ZepFake

from paxm_contracttest import ProviderContract
from paxm_core import ProviderConfig


class TestZepContract(ProviderContract):
    @pytest.fixture
    def paxm_provider_type(self) -> str:
        return "zep"

    @pytest.fixture
    def paxm_provider_config(self, zep: ZepFake) -> ProviderConfig:
        return ProviderConfig(
            type="zep", enabled=True, api_key=zep.state.api_key, base_url=zep.base_url, user_id="todd"
        )

    @pytest.fixture
    def paxm_expected_capabilities(self) -> set[str]:
        # Spelled out (not read from the registration) so that losing one fails here. A user graph
        # refuses eval-scope cleanup by design; the subclass below checks it on a paxm-eval graph.
        return {"put_batch", "delete", "close", "attribution"}


class TestZepEvalGraphContract(TestZepContract):
    """A dedicated ``paxm-eval-*`` named graph: the same contract, plus working eval-scope cleanup."""

    @pytest.fixture
    def paxm_provider_config(self, zep: ZepFake) -> ProviderConfig:
        return ProviderConfig(
            type="zep",
            enabled=True,
            api_key=zep.state.api_key,
            base_url=zep.base_url,
            extra={"graph_id": "paxm-eval-contract"},
        )

    @pytest.fixture
    def paxm_expected_capabilities(self) -> set[str]:
        return {"put_batch", "delete", "eval_scope_cleanup", "close", "attribution"}
