"""An empty config file is refused with advice; the advised command, run as written, repairs it."""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pexpect = pytest.importorskip("pexpect")

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"
PLUGINS = {"PAXM_LOAD_PLUGINS": "sqlite,claude_code"}


def _paxm(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **PLUGINS, "PAXM_CONFIG": str(config)}
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        timeout=60,
    )


def _advice(config: Path) -> list[str]:
    refused = _paxm(config, "recall", "--query", "anything")
    assert refused.returncode == 1
    assert "the config file is empty" in refused.stderr
    found = re.search(r"run `(paxm [^`]+)`", refused.stderr)
    assert found, refused.stderr
    argv = shlex.split(found.group(1))
    assert argv[0] == "paxm"
    return argv[1:]


@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_the_advised_command_repairs_an_empty_config_in_a_terminal(tmp_path: Path, content: str) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text(content)
    advised = _advice(config)
    env = {**os.environ, **PLUGINS, "PAXM_CONFIG": str(config), "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"}
    child = pexpect.spawn(
        sys.executable, ["-c", ENTRY, *advised], env=env, encoding="utf-8", timeout=30, dimensions=(50, 200)
    )
    child.logfile_read = io.StringIO()
    child.expect("Memory providers to enable")
    child.send("\r")  # sqlite is pre-ticked
    child.expect("Agents to connect")
    child.send("\r")
    child.expect("Apply this setup")
    child.send("y")
    child.expect(pexpect.EOF)
    child.close()
    log = child.logfile_read.getvalue()
    assert child.exitstatus == 0, log
    assert "saved config" in log
    assert yaml.safe_load(config.read_text())["providers"]["sqlite"]["enabled"] is True
    assert _paxm(config, "recall", "--query", "anything").returncode == 0


def test_the_advised_command_with_yes_repairs_an_empty_config(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text("")
    done = _paxm(config, *_advice(config), "--yes")
    assert done.returncode == 0, done.stderr
    assert _paxm(config, "recall", "--query", "anything").returncode == 0


def test_a_config_with_content_still_needs_force(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text("identity:\n  user_id: alice\n")
    refused = _paxm(config, "setup", "--yes")
    assert refused.returncode == 1 and "use --force to overwrite" in refused.stderr
