"""``paxm eval provider jsonrpc`` against the Node example and broken plugins, as a real process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from paxm_contracttest.harness import require
from paxm_core.api.errors import PaxmError
from paxm_provider_jsonrpc.conformance_cmd import jsonrpc

ROOT = Path(__file__).resolve().parents[3]
NODE_EXAMPLE = ROOT / "examples" / "jsonrpc-provider-node" / "provider.js"
SCRIPTED = ROOT / "providers" / "paxm-provider-jsonrpc" / "tests" / "plugins" / "scripted.py"
PAXM = Path(sys.executable).with_name("paxm")


@pytest.fixture
def needs_node() -> None:
    """The Node example runs in Node: skipped without it, a failure in CI (``require``)."""
    if shutil.which("node") is None:
        require("node is not installed: the Node example provider runs in it")


CHECKS = [
    "health",
    "capabilities",
    "put acknowledgement",
    "stable ref id",
    "search fidelity",
    "attribution fidelity",
    "putBatch",
    "delete lifecycle",
]


def paxm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PAXM), *args], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


@pytest.mark.usefixtures("needs_node")
def test_node_example_passes_conformance_json(tmp_path: Path) -> None:
    store = tmp_path / "store.json"
    proc = paxm(
        "eval", "provider", "jsonrpc", "--command", str(NODE_EXAMPLE), "--timeout", "20s", "--json",
        env={"PAXM_SAMPLE_PROVIDER_STORE": str(store)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["protocol"] == "paxm-jsonrpc-provider-v1" and report["passed"] is True
    assert report["capabilities"] == {"put_batch": True, "delete": True, "attribution": True}
    assert [c["name"] for c in report["checks"]] == CHECKS
    assert all(c["passed"] and c["required"] for c in report["checks"])
    # the delete lifecycle cleaned up after itself, and the store is private
    assert json.loads(store.read_text())["items"] == {}
    assert store.stat().st_mode & 0o777 == 0o600


@pytest.mark.usefixtures("needs_node")
def test_node_example_text_report(tmp_path: Path) -> None:
    proc = paxm(
        "eval", "provider", "jsonrpc", "--command", "node", "--arg", str(NODE_EXAMPLE), "--timeout", "20s",
        env={"PAXM_SAMPLE_PROVIDER_STORE": str(tmp_path / "s.json")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "paxm JSON-RPC provider conformance: passed=true protocol=paxm-jsonrpc-provider-v1"
    assert lines[1:] == [f"  PASS  {name}" for name in CHECKS]


def test_failing_plugin_exits_1_with_fail_lines(tmp_path: Path) -> None:
    proc = paxm(
        "eval", "provider", "jsonrpc", "--command", sys.executable, "--arg", str(SCRIPTED),
        env={"SCRIPTED_MODE": "short_batch", "SCRIPTED_STORE": str(tmp_path / "s.json")},
    )  # fmt: skip
    assert proc.returncode == 1
    assert "  FAIL  putBatch: conformance paxm.putBatch: malformed result: 1 refs for 2 items" in proc.stdout
    assert "  PASS  search fidelity" in proc.stdout
    assert proc.stderr.startswith("Error: JSON-RPC provider failed required conformance checks")


def test_missing_command_and_bad_timeout_are_usage_errors() -> None:
    runner = CliRunner()
    result = runner.invoke(jsonrpc, [])
    assert result.exit_code == 2 and "--command" in result.output
    result = runner.invoke(jsonrpc, ["--command", "/bin/true", "--timeout", "soon"])
    assert result.exit_code == 2 and "not a duration" in result.output


def test_unstartable_command_fails_health_cleanly(tmp_path: Path) -> None:
    result = CliRunner().invoke(jsonrpc, ["--command", str(tmp_path / "missing"), "--json"])
    assert isinstance(result.exception, PaxmError)
    report = json.loads(result.output)
    assert report["passed"] is False
    assert [c["name"] for c in report["checks"]] == ["health", "capabilities"]
    assert "cannot start plugin command" in report["checks"][0]["error"]
