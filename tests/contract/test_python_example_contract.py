"""The stdlib Python example plugin passes conformance and the contract suite through the jsonrpc type."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paxm_contracttest import ProviderContract
from paxm_core import ProviderConfig
from paxm_provider_jsonrpc.conformance import run_conformance
from paxm_provider_jsonrpc.provider import JsonRpcProvider

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "jsonrpc-provider-python" / "provider.py"


def example_config(store: Path) -> ProviderConfig:
    return ProviderConfig(
        type="jsonrpc",
        enabled=True,
        command=sys.executable,
        args=[str(EXAMPLE)],
        env={"PAXM_SAMPLE_PROVIDER_STORE": str(store)},
        timeout=20.0,
    )


class TestPythonExampleContract(ProviderContract):
    @pytest.fixture
    def paxm_provider_type(self) -> str:
        return "jsonrpc"

    @pytest.fixture
    def paxm_provider_config(self, tmp_path: Path) -> ProviderConfig:
        return example_config(tmp_path / "store.json")

    @pytest.fixture
    def paxm_expected_capabilities(self) -> set[str]:
        return {"put_batch", "delete", "attribution"}


def test_python_example_passes_conformance(tmp_path: Path) -> None:
    report = run_conformance(JsonRpcProvider("conformance", example_config(tmp_path / "store.json"))).to_json()
    assert report["passed"] is True, report
    assert all(check["passed"] for check in report["checks"])
    assert (tmp_path / "store.json").stat().st_mode & 0o777 == 0o600
