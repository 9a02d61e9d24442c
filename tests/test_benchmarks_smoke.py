"""The benchmark runners keep working: a quick run of every runner (numbers are read by people, not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quick_benchmark_run_completes_and_reports_medians() -> None:
    # the harness latency runners drive real agent binaries; their end-to-end tests cover that path
    harnesses = "claude,codex,opencode,pi,kilo,qwen,kimi,cline,gemini,copilot"
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--skip", harnesses],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for runner in ("sqlite", "router", "queue", "hook"):
        assert f"== {runner}: exit 0" in out.stdout
    assert "ratio" in out.stdout and "median" in out.stdout
