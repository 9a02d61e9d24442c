"""A relative ``command`` names a file, not a ``PATH`` entry: the working directory (CLI) or the
config file's directory (config) is where it is looked for, as docs/jsonrpc-provider-protocol.md says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from paxm_core import Deadline, ProviderConfig
from paxm_provider_jsonrpc.provider import JsonRpcProvider

SCRIPTED = Path(__file__).parent / "plugins" / "scripted.py"
PAXM = Path(sys.executable).with_name("paxm")


def _plugin(directory: Path, name: str) -> Path:
    """An executable beside the user (not on ``PATH``) that runs the scripted test plugin."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        f"os.execv(sys.executable, [sys.executable, {str(SCRIPTED)!r}, *sys.argv[1:]])\n",
        encoding="utf-8",
    )
    path.chmod(0o700)
    return path


def _run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PAXM), *args], capture_output=True, text=True, timeout=120, cwd=cwd, env={**os.environ, **env}
    )


def test_conformance_command_dot_slash_runs_the_file_in_the_working_directory(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _plugin(work, "provider.py")
    result = _run(
        "eval", "provider", "jsonrpc", "--command", "./provider.py",
        cwd=work, env={"SCRIPTED_STORE": str(tmp_path / "store.json")},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed=true" in result.stdout


def test_a_relative_path_in_code_resolves_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plugin(tmp_path / "bin", "plugin")
    monkeypatch.chdir(tmp_path)
    config = ProviderConfig(
        type="jsonrpc", command="bin/plugin", env={"SCRIPTED_STORE": str(tmp_path / "s.json")}, timeout=10.0
    )
    provider = JsonRpcProvider("p", config)
    provider.health(Deadline.after(10))  # raises when the plugin cannot be started
    monkeypatch.chdir(tmp_path / "bin")  # resolved once, when configured
    provider.health(Deadline.after(10))  # raises when the plugin cannot be started


def test_config_command_dot_slash_resolves_against_the_config_directory(tmp_path: Path) -> None:
    cfg_dir = tmp_path / "cfg"
    plugin = _plugin(cfg_dir, "plugin")
    config = cfg_dir / "config.yaml"
    config.write_text(
        "version: 1\nagents: {}\nproviders:\n"
        "  notes:\n    type: jsonrpc\n    enabled: true\n    command: ./plugin\n"
        f"    env:\n      SCRIPTED_STORE: {tmp_path / 'store.json'}\n",
        encoding="utf-8",
    )
    config.chmod(0o600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    remembered = _run(
        "--config", str(config), "remember", "--text", "the deploy region is eu-west-3", cwd=elsewhere, env={}
    )
    assert remembered.returncode == 0, remembered.stdout + remembered.stderr
    shown = _run("--config", str(config), "config", "show", "--json", cwd=elsewhere, env={})
    assert str(plugin) in shown.stdout, shown.stdout
