"""The stdlib Python example plugin passes conformance and the contract suite through the jsonrpc type."""

from __future__ import annotations

import sys
from pathlib import Path

from example_kit import ExampleContract, example_config

from paxm_provider_jsonrpc.conformance import run_conformance
from paxm_provider_jsonrpc.provider import JsonRpcProvider

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "jsonrpc-provider-python" / "provider.py"


class TestPythonExampleContract(ExampleContract):
    command = sys.executable
    script = EXAMPLE


def test_python_example_passes_conformance(tmp_path: Path) -> None:
    config = example_config(sys.executable, EXAMPLE, tmp_path / "store.json")
    report = run_conformance(JsonRpcProvider("conformance", config)).to_json()
    assert report["passed"] is True, report
    assert all(check["passed"] for check in report["checks"])
    assert (tmp_path / "store.json").stat().st_mode & 0o777 == 0o600
