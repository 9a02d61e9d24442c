"""``docs/cli.md`` is the ``--help`` of every paxm command, generated, and CI checks it is current.

Regenerate after changing a command's help::

    PAXM_WRITE_CLI_DOCS=1 uv run --all-packages pytest tests/test_cli_reference.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from paxm_core.cli import cli

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"

HEADER = """# Command-line reference

Every `paxm` command with its `--help`, generated from the code (installed plugins add
commands: this page shows those of this repository's distributions). Regenerate with
`PAXM_WRITE_CLI_DOCS=1 uv run --all-packages pytest tests/test_cli_reference.py`; CI fails when it
is stale.
"""


def _walk(group: click.Group, path: list[str]) -> list[list[str]]:
    ctx = click.Context(group, info_name=" ".join(path))
    found = [path]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        if isinstance(command, click.Group):
            found.extend(_walk(command, [*path, name]))
        else:
            found.append([*path, name])
    return found


def _help(path: list[str]) -> str:
    """``paxm … --help`` as a user's fresh process prints it (no state from other tests)."""
    argv = [sys.executable, "-c", "import sys; from paxm_core.cli import main; sys.argv[0] = 'paxm'; main()"]
    env = {**os.environ, "COLUMNS": "100"}
    out = subprocess.run([*argv, *path[1:], "--help"], capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.rstrip()


def render() -> str:
    """The whole page: a section per command, its help as ``paxm … --help`` prints it."""
    parts = [HEADER]
    for path in _walk(cli, ["paxm"]):
        parts.append(f"\n## `{' '.join(path)}`\n\n```\n{_help(path)}\n```\n")
    return "".join(parts)


def test_cli_reference_is_current() -> None:
    page = render()
    if os.environ.get("PAXM_WRITE_CLI_DOCS") == "1":
        DOC.write_text(page, encoding="utf-8")
    assert DOC.read_text(encoding="utf-8") == page, (
        "docs/cli.md is stale: PAXM_WRITE_CLI_DOCS=1 uv run --all-packages pytest tests/test_cli_reference.py"
    )
