"""The benchmark runners keep working: a quick run of every runner (numbers are read by people, not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests._kit import load_module

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "benchmarks" / "run.py"
#: the harness latency runners drive real agent binaries; their end-to-end tests cover that path
HARNESSES = ("claude", "codex", "opencode", "pi", "kilo", "qwen", "kimi", "cline", "gemini", "copilot")


def _run_module() -> object:
    return load_module("paxm_benchmarks_run", RUN)


@pytest.mark.slow
# read-only and minutes long: it runs in the background from collection on (root conftest.py)
@pytest.mark.prefetch_run(sys.executable, RUN, "--quick", "--skip", ",".join(HARNESSES), timeout=1500)
def test_quick_benchmark_run_completes_and_reports_medians(prefetched_run: subprocess.CompletedProcess[str]) -> None:
    out = prefetched_run
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    run = _run_module()
    runners = [name for name in run.RUNNERS if name not in HARNESSES]  # type: ignore[attr-defined]
    assert {"sqlite", "router", "queue", "hook", "backfill", "startup"} <= set(runners)
    for runner in runners:
        assert f"== {runner}: exit 0" in out.stdout, runner
    assert "ratio" in out.stdout and "median" in out.stdout
    # every row of the budget table is measured, with the baseline it was measured against
    table = out.stdout.split("== budgets;", 1)[1].splitlines()
    for prefix, target in run.TABLE:  # type: ignore[attr-defined]
        if prefix in run.OPTIONAL:  # type: ignore[attr-defined]
            continue  # measured only on a dataset the user supplies
        rows = [line.strip() for line in table if line.strip().startswith(prefix)]
        assert rows, f"no row for {prefix!r}:\n" + "\n".join(table)
        for row in rows:
            assert "not run" not in row, row
            baseline = row.split(target, 1)[1].strip()
            assert baseline and baseline != "-", row
