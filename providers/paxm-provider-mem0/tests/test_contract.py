"""Both Mem0 provider types pass the paxm contract suite: ``mem0`` against the real Mem0 engine
(mem0ai 2.2.1 behind our REST shim), ``mem0-cloud`` against the recording Cloud server.

Each runs twice: as a normal store, and as a ``paxm-eval-*`` run (``run_id`` set), where the
contract adds eval-scope cleanup (``DELETE /memories?run_id=``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mem0_cloud_fake import Mem0CloudFake
from mem0_fixtures import Mem0Server

from paxm_contracttest import ProviderContract
from paxm_core import ProviderConfig


class _Mem0Contract(ProviderContract):
    #: spelled out, not read from the registration, so that losing one fails here
    expected_capabilities = frozenset({"put_batch", "delete", "close", "attribution"})
    #: the ``run_id`` of a ``paxm-eval-*`` run (eval-scope cleanup expected), or ``""``
    eval_run_id = ""

    @pytest.fixture
    def paxm_expected_capabilities(self) -> set[str]:
        return set(self.expected_capabilities | ({"eval_scope_cleanup"} if self.eval_run_id else set()))


class TestMem0SelfHostedContract(_Mem0Contract):
    provider_type = "mem0"

    @pytest.fixture
    def paxm_provider_config(self, mem0_server: Mem0Server) -> ProviderConfig:
        return ProviderConfig(
            type="mem0",
            enabled=True,
            base_url=mem0_server.base_url,
            api_key=mem0_server.api_key,
            user_id=mem0_server.fresh_user(),
            run_id=self.eval_run_id and self.eval_run_id + "-" + mem0_server.fresh_user(),
        )


class TestMem0SelfHostedEvalRunContract(TestMem0SelfHostedContract):
    eval_run_id = "paxm-eval-contract"


class TestMem0CloudContract(_Mem0Contract):
    provider_type = "mem0-cloud"

    @pytest.fixture
    def cloud_server(self) -> Iterator[Mem0CloudFake]:
        fake = Mem0CloudFake()
        # writes still go add -> event poll -> list; no artificial delay keeps the suite quick
        # (test_mem0_cloud.py covers pending events and a lagging list)
        fake.state.pending_polls = 0
        fake.state.list_lag = 0
        yield fake
        fake.close()

    @pytest.fixture
    def paxm_provider_config(self, cloud_server: Mem0CloudFake) -> ProviderConfig:
        return ProviderConfig(
            type="mem0-cloud",
            enabled=True,
            base_url=cloud_server.base_url,
            api_key=cloud_server.state.api_key,
            user_id="todd",
            run_id=self.eval_run_id,
        )


class TestMem0CloudEvalRunContract(TestMem0CloudContract):
    eval_run_id = "paxm-eval-contract"
