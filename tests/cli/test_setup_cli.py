"""``paxm setup --yes``: golden output, idempotence, routing and agent side effects."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from paxm_core import hookimpl
from paxm_core.cli import cli
from paxm_core.config import load_config
from paxm_core.plugins import get_plugin_manager

GOLDEN = Path(__file__).parents[1] / "config" / "data" / "setup-sqlite-codex.yaml"
ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"
STAMP = re.compile(r"passive_write_started_at: '?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)'?")


def paxm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    return tmp_path / "cfg" / "config.yaml"


def test_golden_sqlite_codex(cfg: Path) -> None:
    result = paxm(
        "setup", "--yes", "--provider", "sqlite", "--agent", "codex", "--user-id", "alice", "--config", str(cfg)
    )
    assert result.returncode == 0, result.stderr
    assert f"saved config: {cfg}" in result.stdout
    assert "Codex: integration installed (owner paxm)" in result.stdout  # paxm-integration-codex
    assert result.stdout.rstrip().endswith("paxm config doctor  # check provider health")
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
    text = cfg.read_text()
    stamps = STAMP.findall(text)
    assert len(stamps) == 1
    normalized = STAMP.sub("passive_write_started_at: __NOW__", text).replace(str(cfg.parent), "__DIR__")
    assert normalized == GOLDEN.read_text()


def test_rerun_needs_force_and_keeps_the_start_time(cfg: Path) -> None:
    args = ("setup", "--yes", "--provider", "sqlite", "--agent", "codex", "--config", str(cfg))
    assert paxm(*args).returncode == 0
    first = cfg.read_text()
    again = paxm(*args)
    assert again.returncode == 1
    assert again.stderr.strip() == f"Error: config already exists at {cfg}; use --force to overwrite"
    assert cfg.read_text() == first
    forced = paxm(*args, "--force")
    assert forced.returncode == 0, forced.stderr
    assert cfg.read_text() == first  # idempotent, passive_write_started_at unchanged
    # Adding an agent later stamps only that agent.
    more = paxm("setup", "--yes", "--force", "--agent", "codex", "--agent", "claude", "--config", str(cfg))
    assert more.returncode == 0, more.stderr
    config = load_config(cfg)
    assert config.agents["codex"].passive_write_started_at == STAMP.findall(first)[0]
    assert config.agents["claude"].passive_write_started_at > config.agents["codex"].passive_write_started_at


def test_team_profiles_and_user_slug(cfg: Path) -> None:
    result = paxm("setup", "--yes", "--user-id", "Todd S.", "--team-id", "Core, infra,core", "--config", str(cfg))
    assert result.returncode == 0, result.stderr
    config = load_config(cfg)
    assert config.identity.user_id == "todd-s"
    assert config.write_profiles["ltm"].scope.type == "personal" and config.write_profiles["ltm"].scope.id == "todd-s"
    teams = {n: p for n, p in config.write_profiles.items() if n.startswith("team-")}
    assert sorted(teams) == ["team-core", "team-infra"]
    for name, profile in teams.items():
        assert (profile.scope.type, profile.scope.id, profile.tier, profile.expires_after) == (
            "team", name[5:], "ltm", None
        )  # fmt: skip
        assert [r.name for r in profile.providers] == ["sqlite"]
    bad = paxm("setup", "--yes", "--force", "--team-id", "ok,!!", "--config", str(cfg))
    assert bad.returncode == 1 and "team ID '!!' must contain letters or numbers" in bad.stderr


def test_cloud_provider_routing_and_key_never_echoed(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Core routing only: without the mem0 plugin loaded setup cannot (and need not) check the
    # connection; paxm-provider-mem0's own tests cover setup against its test servers.
    monkeypatch.setenv("PAXM_LOAD_PLUGINS", "sqlite")
    result = paxm(
        "setup", "--yes", "--provider", "sqlite", "--provider", "mem0_cloud", "--config", str(cfg), "--json",
        env={"PAXM_API_KEY": "m0-SUPERSECRET"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "SUPERSECRET" not in result.stdout + result.stderr
    summary = json.loads(result.stdout)
    assert summary["providers"] == ["sqlite", "mem0_cloud"] and summary["config_path"] == str(cfg)
    config = load_config(cfg)
    assert config.providers["mem0_cloud"].api_key == "m0-SUPERSECRET"
    assert config.providers["sqlite"].api_key == ""
    for name in ("default", "passive", "passive_initial"):
        routes = {r.name: r for r in config.recall_profiles[name].providers}
        assert routes["mem0_cloud"].required is True and routes["mem0_cloud"].weight == 1.0
    passive = {r.name: r for r in config.recall_profiles["passive"].providers}
    assert passive["mem0_cloud"].timeout == 0.8 and passive["sqlite"].timeout == 0.25
    assert passive["mem0_cloud"].thresholds is not None and passive["mem0_cloud"].thresholds.min_relevance == 0.2
    for name in ("default", "stm", "ltm"):
        assert [r.name for r in config.write_profiles[name].providers] == ["sqlite", "mem0_cloud"]
    shown = paxm("config", "show", "--config", str(cfg))
    assert "SUPERSECRET" not in shown.stdout and "api_key: <redacted>" in shown.stdout

    # Switching to mem0_cloud only disables sqlite and drops it from the six profiles.
    only = paxm("setup", "--yes", "--force", "--provider", "mem0_cloud", "--config", str(cfg))
    assert only.returncode == 0, only.stderr
    config = load_config(cfg)
    assert not config.providers["sqlite"].enabled
    for profile in (*config.recall_profiles.values(), *config.write_profiles.values()):
        assert [r.name for r in profile.providers] == ["mem0_cloud"]


def test_keyed_provider_without_key_is_refused(cfg: Path) -> None:
    result = paxm("setup", "--yes", "--provider", "zep", "--config", str(cfg))
    assert result.returncode == 1
    assert "provider zep (zep) needs an API key; pass --api-key KEY or set PAXM_API_KEY" in result.stderr
    assert not cfg.exists()


def test_unknown_names_and_missing_yes(cfg: Path) -> None:
    bad = paxm("setup", "--yes", "--provider", "sqlight", "--config", str(cfg))
    assert bad.returncode == 1
    assert "unknown setup provider 'sqlight' (options: sqlite, zep, mem0, mem0_cloud, memos" in bad.stderr
    bad_agent = paxm("setup", "--yes", "--agent", "vim", "--config", str(cfg))
    assert bad_agent.returncode == 1 and "unknown setup agent 'vim' (options: codex, claude, pi," in bad_agent.stderr
    no_yes = paxm("setup", "--config", str(cfg))
    assert no_yes.returncode == 1
    assert "setup needs --yes when not run in a terminal" in no_yes.stderr
    assert not cfg.exists()


def test_plugin_integration_selects_only_its_agent(cfg: Path) -> None:
    assert paxm("setup", "--yes", "--agent", "claude", "--config", str(cfg)).returncode == 0
    result = paxm("setup", "--yes", "--force", "--integration", "codex-plugin", "--config", str(cfg))
    assert result.returncode == 0, result.stderr
    config = load_config(cfg)
    assert config.agents["codex"].enabled and config.agents["codex"].integration.owner == "codex-plugin"
    assert config.agents["claude"].enabled  # other agents keep their state


class _FakeIntegration:
    name = "codex"
    aliases = ("codex-cli",)

    def __init__(self) -> None:
        self.calls: list[tuple[Any, str]] = []

    def install(self, config: Any, *, owner: str) -> None:
        # Real work a plugin does: write a file beside the config.
        (config.hooks_dir).mkdir(parents=True, exist_ok=True)
        (config.hooks_dir / "codex-installed").write_text(owner)
        self.calls.append((config, owner))


def test_setup_calls_integration_plugins(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    integration = _FakeIntegration()

    class Plugin:
        @hookimpl
        def paxm_register_integrations(self, register: Any) -> None:
            register(integration)

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(Plugin(), name="fake-codex")
    monkeypatch.setattr("paxm_core.plugins.get_plugin_manager", lambda load_entrypoints=True: pm)
    result = CliRunner().invoke(cli, ["--config", str(cfg), "setup", "--yes", "--agent", "codex", "--agent", "pi"])
    assert result.exit_code == 0, result.output
    assert "Codex: integration installed (owner paxm)" in result.output
    assert "Pi: enabled in config; no integration plugin is installed" in result.output
    assert len(integration.calls) == 1 and integration.calls[0][1] == "paxm"
    assert (cfg.parent / "hooks" / "codex-installed").read_text() == "paxm"


def test_saved_setup_is_upstream_shaped_yaml(cfg: Path) -> None:
    assert paxm("setup", "--yes", "--config", str(cfg)).returncode == 0
    data = yaml.safe_load(cfg.read_text())
    assert list(data)[:3] == ["version", "identity", "providers"]
    assert data["capture_queue"] == {
        "max_episode_age": "1m",
        "retry_min": "1s",
        "max_attempts": 10,
        "provider_concurrency": {"sqlite": 1, "default": 4},
    }


def test_setup_stops_a_running_hook_daemon(cfg: Path) -> None:
    """As upstream: after saving, a running daemon is flushed and stopped so it picks up the new config."""
    assert paxm("setup", "--yes", "--config", str(cfg)).returncode == 0
    sock = cfg.parent / "hooks" / "paxm-hook.sock"
    daemon = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "__hook-daemon", "--config", str(cfg), "--idle-timeout", "60s"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert daemon.poll() is None, daemon.stderr.read() if daemon.stderr else ""
            assert time.monotonic() < deadline, "hook daemon did not start"
            time.sleep(0.05)
        result = paxm("setup", "--yes", "--force", "--config", str(cfg))
        assert result.returncode == 0, result.stderr
        assert "warning" not in result.stderr
        assert daemon.wait(timeout=10) == 0
        assert not sock.exists()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        if daemon.stderr:
            daemon.stderr.close()


def _run_in_terminal(args: list[str], answers: str) -> tuple[int, str]:
    """Run paxm with a pseudo-terminal as stdin/stdout (the interactive path) and feed ``answers``."""
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", ENTRY, *args], stdin=slave, stdout=slave, stderr=slave, close_fds=True
    )
    os.close(slave)
    output = b""
    sent = False
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
                if not sent and b"?" in output:
                    os.write(master, answers.encode())
                    sent = True
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, output.decode(errors="replace").replace("\r\n", "\n")


def test_terminal_setup_confirms_before_saving(cfg: Path) -> None:
    code, out = _run_in_terminal(["setup", "--agent", "claude", "--user-id", "tty", "--config", str(cfg)], "n\n")
    assert code == 0, out
    assert "Setup summary" in out and "User: tty" in out and "Agents: Claude Code" in out
    assert "setup cancelled" in out and not cfg.exists()
    code, out = _run_in_terminal(["setup", "--agent", "claude", "--user-id", "tty", "--config", str(cfg)], "y\n")
    assert code == 0, out
    assert f"saved config: {cfg}" in out
    assert load_config(cfg).agents["claude"].enabled


def test_setup_over_an_old_file_merges_defaults_and_keeps_custom_values(cfg: Path) -> None:
    cfg.parent.mkdir(parents=True)
    cfg.write_text(
        """
identity: {user_id: old}
providers:
  sqlite: {type: sqlite, enabled: true, path: /custom/memory.sqlite}
  mine: {type: acme, enabled: true, region: eu}
recall_profiles:
  default:
    providers: [{name: sqlite, required: true}, {name: mine, required: false, weight: 0.5}]
    max_results: 8
agents:
  codex:
    enabled: true
    hooks:
      user_input:
        recall: {enabled: true, profile: default, query_template: "{{ .prompt }}"}
"""
    )
    result = CliRunner().invoke(cli, ["--config", str(cfg), "setup", "--yes", "--force", "--agent", "Claude Code"])
    assert result.exit_code == 0, result.output
    config = load_config(cfg)
    assert config.identity.user_id == "old"
    assert config.providers["sqlite"].path == "/custom/memory.sqlite"
    assert config.providers["mine"].extra == {"region": "eu"}
    assert "zep" in config.providers and not config.providers["zep"].enabled
    default = config.recall_profiles["default"]
    assert default.max_results == 3  # the old default of 8 is migrated
    mine = next(r for r in default.providers if r.name == "mine")
    assert (mine.required, mine.weight) == (False, 0.5)  # custom routing of enabled providers is kept
    hook = config.agents["codex"].hooks["user_input"]
    assert hook.recall.profile == "passive" and hook.recall.max_results == 2
    assert hook.recall.insertion.min_score == 0.8 and hook.recall.initial is not None
    assert set(config.agents["codex"].hooks) >= {"session_start", "turn_end"}
    assert not config.agents["codex"].enabled and config.agents["claude"].enabled  # the alias was understood
