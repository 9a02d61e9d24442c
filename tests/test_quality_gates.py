"""Style and type gates run as part of the one test command (ruff format, ruff check, mypy --strict)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_format_is_clean() -> None:
    out = _run("ruff", "format", "--check", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_lint_is_clean() -> None:
    out = _run("ruff", "check", ".")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
@pytest.mark.prefetch_run(sys.executable, "-m", "mypy", timeout=1800)  # overlaps the tests before it
def test_mypy_strict_on_core_and_contracttest(prefetched_run: subprocess.CompletedProcess[str]) -> None:
    out = prefetched_run  # files and --strict come from [tool.mypy] in pyproject.toml
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
