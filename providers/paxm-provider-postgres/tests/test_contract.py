"""The postgres provider passes the paxm provider contract suite against a real server."""

from __future__ import annotations

import pytest
from pgserver import PgServer, pg_config

from paxm_contracttest import ProviderContract
from paxm_core import ProviderConfig


class TestPostgresContract(ProviderContract):
    @pytest.fixture
    def paxm_provider_type(self) -> str:
        return "postgres"

    @pytest.fixture
    def paxm_provider_config(self, pg_server: PgServer, schema: str) -> ProviderConfig:
        return pg_config(pg_server, schema)  # type: ignore[no-any-return]

    @pytest.fixture
    def paxm_expected_capabilities(self) -> set[str]:
        return {
            "put_batch",
            "delete",
            "cleanup_expired",
            "close",
            "turn_boundaries",
            "eval_scope_cleanup",
            "attribution",
        }
