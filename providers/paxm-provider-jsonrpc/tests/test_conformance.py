"""The conformance kit: upstream's checks, order, names and report shape."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paxm_core import ProviderConfig
from paxm_provider_jsonrpc.conformance import run_conformance
from paxm_provider_jsonrpc.provider import JsonRpcProvider

SCRIPT = Path(__file__).parent / "plugins" / "scripted.py"


def conformance(tmp_path: Path, mode: str) -> dict[str, object]:
    config = ProviderConfig(
        type="jsonrpc",
        command=sys.executable,
        args=[str(SCRIPT)],
        env={"SCRIPTED_MODE": mode, "SCRIPTED_STORE": str(tmp_path / "store.json")},
        timeout=10.0,
    )
    return run_conformance(JsonRpcProvider("conformance", config)).to_json()


def summary(report: dict[str, object]) -> list[tuple[str, str]]:
    checks = report["checks"]
    assert isinstance(checks, list)
    return [(c["name"], "SKIP" if c.get("skipped") else ("PASS" if c["passed"] else "FAIL")) for c in checks]


def test_full_plugin_passes_every_check_in_order(tmp_path: Path) -> None:
    report = conformance(tmp_path, "ok")
    assert report["protocol"] == "paxm-jsonrpc-provider-v1" and report["passed"] is True
    assert report["capabilities"] == {"put_batch": True, "delete": True, "attribution": True}
    assert summary(report) == [
        ("health", "PASS"),
        ("capabilities", "PASS"),
        ("put acknowledgement", "PASS"),
        ("stable ref id", "PASS"),
        ("search fidelity", "PASS"),
        ("attribution fidelity", "PASS"),
        ("putBatch", "PASS"),
        ("delete lifecycle", "PASS"),
    ]
    assert isinstance(report["duration_ms"], int)
    assert set(report) == {"protocol", "passed", "capabilities", "checks", "duration_ms"}


def test_upstream_go_style_output_passes(tmp_path: Path) -> None:
    report = conformance(tmp_path, "go_style")
    assert report["passed"] is True, report


def test_legacy_plugin_passes_with_fallback_and_skips(tmp_path: Path) -> None:
    report = conformance(tmp_path, "legacy")
    assert report["passed"] is True
    assert report["capabilities"] == {"put_batch": False, "delete": False, "attribution": False}
    assert summary(report)[-3:] == [
        ("attribution fidelity", "SKIP"),
        ("putBatch fallback", "PASS"),
        ("delete lifecycle", "SKIP"),
    ]
    skipped = [c for c in report["checks"] if c.get("skipped")]  # type: ignore[union-attr]
    assert all(c == {"name": c["name"], "required": False, "passed": False, "skipped": True} for c in skipped)


def test_plugin_that_drops_attribution_it_advertises_fails(tmp_path: Path) -> None:
    report = conformance(tmp_path, "lying_attribution")
    assert report["passed"] is False
    checks = {c["name"]: c for c in report["checks"]}  # type: ignore[union-attr]
    assert checks["search fidelity"]["passed"] is True
    assert checks["attribution fidelity"]["passed"] is False
    assert "search attribution = origin {} scope {}" in checks["attribution fidelity"]["error"]
    assert checks["putBatch"]["error"].startswith("putBatch attribution: ")


def test_capabilities_error_aborts_the_run(tmp_path: Path) -> None:
    report = conformance(tmp_path, "invalid_params")
    assert report["passed"] is False
    checks = {c["name"]: c for c in report["checks"]}  # type: ignore[union-attr]
    assert checks["health"]["passed"] is True
    assert "json-rpc error -32602: text is required" in checks["capabilities"]["error"]
    assert list(checks) == ["health", "capabilities"]  # as upstream: nothing runs after it


def test_short_batch_fails_the_batch_check(tmp_path: Path) -> None:
    report = conformance(tmp_path, "short_batch")
    assert report["passed"] is False
    failed = [c for c in report["checks"] if not c["passed"] and not c.get("skipped")]  # type: ignore[union-attr]
    assert [c["name"] for c in failed] == ["putBatch"]
    assert "1 refs for 2 items" in failed[0]["error"]


@pytest.mark.parametrize("mode", ["garbage", "wrong_id"])
def test_broken_plugin_fails_health_with_reason(tmp_path: Path, mode: str) -> None:
    report = conformance(tmp_path, mode)
    assert report["passed"] is False
    health = report["checks"][0]  # type: ignore[index]
    assert health["name"] == "health" and health["passed"] is False and health["error"]
