"""The hybrid provider passes the paxm provider contract suite, built through its entry point."""

from __future__ import annotations

from paxm_contracttest import ProviderContract


class TestHybridContract(ProviderContract):
    provider_type = "sqlite-hybrid"
    expected_capabilities = frozenset(
        {"put_batch", "delete", "cleanup_expired", "close", "turn_boundaries", "attribution"}
    )
