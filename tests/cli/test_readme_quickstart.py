"""The README's quick start installs only what running paxm needs, and its eval line works from a clone."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from paxm_contracttest.harness import require

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
#: development tools and heavy optional libraries: none is needed to run paxm with SQLite
NOT_FOR_RUNNING = ("pytest", "mypy", "ruff", "hypothesis", "psycopg", "numpy", "pexpect", "mcp")
ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"


def _try_it_line() -> str:
    section = README.split("## Try it", 1)[1]
    match = re.search(r"```sh\n(.+?)\n```", section, flags=re.S)
    assert match, "no sh block in the Try it section"
    return match.group(1).strip()


def _sh_lines() -> list[str]:
    return [
        line.strip() for block in re.findall(r"```sh\n(.+?)\n```", README, flags=re.S) for line in block.splitlines()
    ]


def test_the_try_it_line_installs_only_what_running_paxm_needs() -> None:
    uv = shutil.which("uv")
    if uv is None:
        require("uv is not on PATH")
    runs = re.findall(r"\buv run((?: --?[\w-]+)*) paxm\b", _try_it_line())
    assert runs, _try_it_line()
    assert len(set(runs)) == 1, f"every `uv run` of the line must install the same set: {runs}"
    flags = shlex.split(runs[0])
    # what `uv run <flags>` syncs from the lock file, resolved offline
    export = subprocess.run(
        [uv, "export", "--frozen", "--no-hashes", "--no-header", "--no-annotate", *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert export.returncode == 0, export.stderr
    names = {re.split(r"[=<>; \[]", line.strip(), maxsplit=1)[0].lower() for line in export.stdout.splitlines()}
    assert "click" in names and "-e" in names  # paxm itself (editable) and its dependencies
    unwanted = sorted(n for n in names if n in NOT_FOR_RUNNING or n.startswith(NOT_FOR_RUNNING))
    assert not unwanted, f"the quick start installs {unwanted}"


def _eval_commands() -> list[list[str]]:
    commands = []
    for line in _sh_lines():
        if line.startswith("paxm eval run "):
            commands.append(shlex.split(line.split("#", 1)[0]))
    return commands


def test_every_readme_eval_run_line_names_paths_in_the_repository() -> None:
    commands = _eval_commands()
    assert commands
    for argv in commands:
        for flag in ("--suite", "--budget", "--compare"):
            if flag in argv:
                path = ROOT / argv[argv.index(flag) + 1]
                assert path.exists(), f"{' '.join(argv)}: {path} is not in a clone"


def test_the_readme_eval_run_line_passes_from_a_clone(isolated_home: Path) -> None:
    argv = _eval_commands()[0]
    assert argv[:3] == ["paxm", "eval", "run"]
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, *argv[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
