"""The example JSON-RPC plugins of ``examples/``: their provider config and their contract suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from paxm_contracttest import ProviderContract
from paxm_core import ProviderConfig


def example_config(command: str, script: Path, store: Path, timeout: float = 20.0) -> ProviderConfig:
    """A ``jsonrpc`` provider running the example ``script`` with ``command``, keeping its notes in ``store``."""
    return ProviderConfig(
        type="jsonrpc",
        enabled=True,
        command=command,
        args=[str(script)],
        env={"PAXM_SAMPLE_PROVIDER_STORE": str(store)},
        timeout=timeout,
    )


class ExampleContract(ProviderContract):
    """The provider contract for an example plugin; a ``Test...`` subclass names ``command`` and ``script``."""

    command: str
    script: Path

    @pytest.fixture
    def paxm_provider_type(self) -> str:
        return "jsonrpc"

    @pytest.fixture
    def paxm_provider_config(self, tmp_path: Path) -> ProviderConfig:
        return example_config(self.command, self.script, tmp_path / "store.json")

    @pytest.fixture
    def paxm_expected_capabilities(self) -> set[str]:
        # what the examples advertise; listing it here makes a regression fail, not skip
        return {"put_batch", "delete", "attribution"}
