"""``paxm queue flush`` in a real pseudo-terminal shows delivery progress; piped it shows none."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from _capture_helpers import event

from paxm_core.capture import CaptureQueue, routes_from_write_profiles
from paxm_core.config import load_config

pexpect = pytest.importorskip("pexpect")

ENTRY = "from paxm_core.cli import main; main()"


def _queue_turns(config_path: Path, turns: int) -> None:
    config = load_config(config_path)
    with CaptureQueue(config.capture_queue_path, routes=routes_from_write_profiles(config.write_profiles)) as q:
        for i in range(turns):
            q.append(event(f"e{i}", f"sess-{i}", text=f"turn {i} about the billing service", terminal=True))


def test_flush_draws_a_bar_on_a_terminal_only(tmp_path: Path) -> None:
    config_path = tmp_path / "config.yaml"
    _queue_turns(config_path, 5)
    child = pexpect.spawn(
        sys.executable, ["-c", ENTRY, "--config", str(config_path), "queue", "flush"], encoding="utf-8", timeout=120
    )
    screen = io.StringIO()
    child.logfile_read = screen
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, screen.getvalue()
    assert "\rflush [" in screen.getvalue() and "5/5 100%  done" in screen.getvalue()
    assert "delivered 5" in screen.getvalue()

    second = tmp_path / "piped" / "config.yaml"
    _queue_turns(second, 3)
    piped = subprocess.run(
        [sys.executable, "-c", ENTRY, "--config", str(second), "queue", "flush"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "" and "flush [" not in piped.stdout and "delivered 3" in piped.stdout
