"""Caller-supplied recall limits are bounded before they reach any provider."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_absurd_limits_are_a_clear_usage_error(tmp_path: Path) -> None:
    code = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"
    out = subprocess.run(
        [sys.executable, "-c", code, "--config", str(tmp_path / "c.yaml"), "recall", "-q", "x", "--limit", str(10**30)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1
    assert "limit" in out.stderr and "at most 1000" in out.stderr and "Traceback" not in out.stderr
