"""``paxm eval run`` in a real pseudo-terminal draws a progress bar on stderr; ``--json`` draws none."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

pexpect = pytest.importorskip("pexpect")

ENTRY = "from paxm_core.cli import main; main()"


def _run(args: list[str]) -> tuple[int, str]:
    child = pexpect.spawn(
        sys.executable, ["-c", ENTRY, *args], env={**os.environ, "TERM": "xterm"}, encoding="utf-8", timeout=120
    )
    log = io.StringIO()
    child.logfile_read = log
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus or 0, log.getvalue()


def test_bar_on_a_terminal_and_none_with_json(tmp_path: Path, kit: ModuleType) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    cases = [kit.retrieval_case(f"c{i}") for i in range(6)]
    kit.write_json(suite / "suite.json", kit.suite(*cases))
    code, screen = _run(["eval", "run", "--suite", str(suite)])
    assert code == 0, screen
    assert "\reval [" in screen and "6/6 100%  done" in screen
    assert "cases: 6  passed: 6" in screen
    code, screen = _run(["eval", "run", "--suite", str(suite), "--json"])
    assert code == 0, screen
    assert "eval [" not in screen
    assert json.loads(screen.replace("\r\n", "\n"))["case_count"] == 6
