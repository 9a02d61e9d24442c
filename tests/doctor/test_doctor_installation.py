"""``paxm config doctor`` checks the installation: each enabled agent's hooks, plugins, the registry."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from paxm_core.cli import cli
from paxm_core.doctor import DoctorFinding, register_check, registered_checks, run_checks
from paxm_core.integration import Finding, InstallContext, IntegrationBase
from tests._kit import integration_plugin, use_plugins

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"


def paxm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ),
        timeout=60,
    )


@pytest.fixture
def claude_setup(tmp_path: Path, isolated_home: Path) -> tuple[Path, Path]:
    """A config with SQLite + Claude Code set up for real; returns (config, settings.json)."""
    cfg = tmp_path / "cfg" / "config.yaml"
    done = paxm("--config", str(cfg), "setup", "--yes", "--provider", "sqlite", "--agent", "claude")
    assert done.returncode == 0, done.stderr
    settings = isolated_home / ".claude" / "settings.json"
    assert settings.is_file()
    return cfg, settings


def test_a_healthy_installation_passes(claude_setup: tuple[Path, Path]) -> None:
    cfg, settings = claude_setup
    result = paxm("--config", str(cfg), "config", "doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok: sqlite" in result.stdout
    assert f"ok: Claude Code: hooks installed in {settings}" in result.stdout


def test_a_deleted_hook_client_is_an_error_with_its_fix(claude_setup: tuple[Path, Path], tmp_path: Path) -> None:
    cfg, settings = claude_setup
    data = json.loads(settings.read_text())
    # an environment that was deleted: same package layout, no files
    gone = tmp_path / "removed-venv" / "paxm_core" / "passive" / "client.py"
    for groups in data["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                # the command's client path as if its environment had been deleted
                parts = hook["command"].split()
                hook["command"] = " ".join(str(gone) if p.endswith("client.py") else p for p in parts)
    settings.write_text(json.dumps(data))
    result = paxm("--config", str(cfg), "config", "doctor")
    assert result.returncode == 1
    assert "error: Claude Code: paxm hooks in" in result.stdout
    assert "point at a hook client that does not exist" in result.stdout
    assert "  fix: paxm --config" in result.stdout and "setup --yes" in result.stdout
    assert "installation problem(s): agents:claude" in result.stderr
    rows = json.loads(paxm("--config", str(cfg), "config", "doctor", "--json").stdout)
    row = next(r for r in rows if r["provider"] == "agents:claude")
    assert row["ok"] is False and row["required"] is True and row["level"] == "error"
    assert row["fix"].startswith("paxm --config")
    # the fix it names works, exactly as printed (it names the config file itself)
    assert f"--config {cfg}" in row["fix"]
    fixed = paxm(*shlex.split(row["fix"])[1:])
    assert fixed.returncode == 0, fixed.stderr
    assert paxm("--config", str(cfg), "config", "doctor").returncode == 0


def test_the_fix_for_one_agent_keeps_the_other_agents_enabled(tmp_path: Path, isolated_home: Path) -> None:
    cfg = tmp_path / "cfg" / "config.yaml"
    done = paxm("--config", str(cfg), "setup", "--yes", "--provider", "sqlite", "--agent", "claude", "--agent", "pi")
    assert done.returncode == 0, done.stderr
    (isolated_home / ".claude" / "settings.json").write_text("{}")
    rows = json.loads(paxm("--config", str(cfg), "config", "doctor", "--json").stdout)
    row = next(r for r in rows if r["provider"] == "agents:claude")
    assert row["level"] == "error"
    fixed = paxm(*shlex.split(row["fix"])[1:])
    assert fixed.returncode == 0, fixed.stderr
    after = json.loads(paxm("--config", str(cfg), "config", "doctor", "--json").stdout)
    agents = {r["subject"]: r["level"] for r in after if r.get("check") == "agents"}
    assert agents == {"claude": "ok", "pi": "ok"}, after  # pi still enabled and installed


def test_removed_hooks_are_found(claude_setup: tuple[Path, Path]) -> None:
    cfg, settings = claude_setup
    settings.write_text("{}")
    result = paxm("--config", str(cfg), "config", "doctor")
    assert result.returncode == 1
    assert "error: Claude Code: paxm hooks missing in" in result.stdout


class _TrustingHarness(IntegrationBase):
    """A harness that asks the user to trust hooks (as Codex does): trusted once a marker exists."""

    name = "trusty"
    display_name = "Trusty"

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def default_agent_config(self) -> dict[str, Any]:
        return {"enabled": False, "hooks": {"user_input": {"write": {"enabled": True}}}}

    def check(self, ctx: InstallContext) -> list[Finding]:
        if not self.marker.exists():
            return [Finding("error", "paxm's hooks are not trusted", f"trusty trust {ctx.config.path}")]
        return [Finding("ok", "hooks trusted")]


def test_an_untrusted_hook_fails_doctor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "trusted"
    use_plugins(monkeypatch, trusty=integration_plugin(_TrustingHarness(marker)))
    cfg = tmp_path / "config.yaml"
    runner = CliRunner()
    assert runner.invoke(cli, ["--config", str(cfg), "setup", "--yes", "--agent", "trusty"]).exit_code == 0
    bad = runner.invoke(cli, ["--config", str(cfg), "config", "doctor"])
    assert bad.exit_code == 1
    assert "error: Trusty: paxm's hooks are not trusted" in bad.output
    assert f"  fix: trusty trust {cfg}" in bad.output
    marker.touch()
    good = runner.invoke(cli, ["--config", str(cfg), "config", "doctor"])
    assert good.exit_code == 0, good.output
    assert "ok: Trusty: hooks trusted" in good.output


def test_an_enabled_agent_without_its_integration_is_a_warning(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("providers:\n  sqlite: {type: sqlite, enabled: true}\nagents:\n  nosuch: {enabled: true}\n")
    result = paxm("--config", str(cfg), "config", "doctor")
    assert result.returncode == 0, result.stderr  # a warning, not an error
    assert "warn: agent nosuch is enabled but no integration is installed" in result.stdout


def test_registry_runs_added_checks_and_contains_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from paxm_core import doctor
    from paxm_core.config import load_config

    monkeypatch.setattr(doctor, "_CHECKS", dict(doctor._CHECKS))
    register_check("extra", lambda config: [DoctorFinding("extra", "x", "warn", "looked", "do this")])

    def broken(config: object) -> list[DoctorFinding]:
        raise RuntimeError("boom")

    register_check("broken", broken)
    assert registered_checks()[-2:] == ["extra", "broken"]
    found = run_checks(load_config(tmp_path / "none.yaml"), ["extra", "broken"])
    assert found[0] == DoctorFinding("extra", "x", "warn", "looked", "do this")
    assert found[1].level == "error" and "the broken check failed: boom" in found[1].message
