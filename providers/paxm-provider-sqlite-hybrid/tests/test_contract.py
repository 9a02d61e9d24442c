"""The hybrid provider passes the paxm provider contract suite, built through its entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from paxm_contracttest import ProviderContract
from paxm_core import ProviderConfig


class TestHybridContract(ProviderContract):
    @pytest.fixture
    def paxm_provider_type(self) -> str:
        return "sqlite-hybrid"

    @pytest.fixture
    def paxm_provider_config(self, tmp_path: Path) -> ProviderConfig:
        return ProviderConfig(type="sqlite-hybrid", enabled=True, path=str(tmp_path / "memory.db"))

    @pytest.fixture
    def paxm_expected_capabilities(self) -> set[str]:
        return {"put_batch", "delete", "cleanup_expired", "close", "turn_boundaries", "attribution"}
