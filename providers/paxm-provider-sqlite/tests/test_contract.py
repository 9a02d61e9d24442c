"""The SQLite provider passes the paxm provider contract suite, built through its entry point."""

from __future__ import annotations

from paxm_contracttest import ProviderContract


class TestSQLiteContract(ProviderContract):
    provider_type = "sqlite"
    # Spelled out (not read from the registration) so that losing one fails here.
    expected_capabilities = frozenset(
        {"put_batch", "delete", "cleanup_expired", "close", "turn_boundaries", "attribution"}
    )
