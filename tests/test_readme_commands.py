"""The README's two fresh-machine command lines stay true."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _block_after(heading: str) -> str:
    section = README.split(heading, 1)[1]
    match = re.search(r"```sh\n(.+?)\n```", section, flags=re.S)
    assert match, f"no sh block after {heading!r}"
    return match.group(1).strip()


def test_ci_runs_exactly_the_readme_test_command() -> None:
    command = _block_after("## Run every test")
    ci = (ROOT / ".ci" / "run").read_text()
    assert command in ci.splitlines(), f"{command!r} is not a line of .ci/run"


@pytest.mark.slow
def test_the_readme_try_it_line_stores_and_recalls_with_an_empty_home(tmp_path: Path) -> None:
    command = _block_after("## Try it")
    assert command.startswith("python3 -m pip install uv && ") and "paxm remember" in command
    home = tmp_path / "fresh-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "PAXM_", "VIRTUAL_ENV", "UV_"))}
    env["HOME"] = str(home)
    # a user's shell, not this test run's: `uv run pytest` puts the project venv first on PATH
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p and p != venv_bin)
    out = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "stored memory: sqlite/" in out.stdout
    assert '<paxm-recall version="1" mode="active">' in out.stdout and "blue-green" in out.stdout
    assert (home / ".local" / "share" / "paxm" / "memory.sqlite").exists()
