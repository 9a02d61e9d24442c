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
from paxm_core.api.protocols import ConfigKey, ProviderType
from paxm_core.cli import cli
from paxm_core.config import load_config
from paxm_core.integration import InstallContext, IntegrationBase
from tests._kit import integration_plugin, use_plugins

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
    assert "paxm mcp serve --agent <name>  # serve the same memory to MCP clients" in result.stdout
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


class _CloudProvider:
    def __init__(self, name: str) -> None:
        self.name = name

    def search(self, query: Any, deadline: Any) -> list[Any]:
        return []

    def put(self, item: Any, deadline: Any) -> Any:
        raise NotImplementedError

    def health(self, deadline: Any) -> None:
        return None


class _EnsuringProvider(_CloudProvider):
    ensured: list[str] = []

    def ensure_target(self, deadline: Any) -> tuple[str, str]:
        self.ensured.append(self.name)
        return "graph-" + self.name, "created"


class _CloudTypes:
    """Two provider types that describe themselves: a keyed cloud one and one with a set-up step."""

    @hookimpl
    def paxm_register_providers(self, register: Any) -> None:
        register(
            ProviderType(
                "acme-cloud",
                lambda name, cfg: _CloudProvider(name),
                config_keys=(ConfigKey("api_key", secret=True, required=True), ConfigKey("base_url")),
                locality="cloud",
                setup_priority=5,
            )
        )
        register(ProviderType("ensured", lambda name, cfg: _EnsuringProvider(name), setup_priority=7))


def _catalog_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    use_plugins(monkeypatch, **{"cloud-types": _CloudTypes()})


def test_cloud_provider_routing_and_key_never_echoed(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the cloud timeout/thresholds, the key requirement and the order all come from the ProviderType
    _catalog_plugins(monkeypatch)
    cfg.parent.mkdir(parents=True)
    cfg.write_text("providers:\n  acme: {type: acme-cloud}\n  ens: {type: ensured}\n")
    refused = CliRunner().invoke(cli, ["--config", str(cfg), "setup", "--yes", "--force", "--provider", "acme"])
    assert refused.exit_code == 1 and "provider acme (acme-cloud) needs an API key" in str(refused.exception)
    result = CliRunner(env={"PAXM_API_KEY": "m0-SUPERSECRET"}).invoke(
        cli, ["--config", str(cfg), "setup", "--yes", "--force", "--provider", "sqlite", "--provider", "acme", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert "SUPERSECRET" not in result.output
    summary = json.loads(result.output)
    assert sorted(summary["providers"]) == ["acme", "sqlite"] and summary["config_path"] == str(cfg)
    config = load_config(cfg)
    assert config.providers["acme"].api_key == "m0-SUPERSECRET"
    assert config.providers["sqlite"].api_key == ""  # sqlite declares no api_key key
    for name in ("default", "passive", "passive_initial"):
        routes = {r.name: r for r in config.recall_profiles[name].providers}
        assert routes["acme"].required is True and routes["acme"].weight == 1.0
    passive = {r.name: r for r in config.recall_profiles["passive"].providers}
    assert passive["acme"].timeout == 0.8  # a cloud type without its own passive_timeout
    assert passive["acme"].thresholds is not None and passive["acme"].thresholds.min_relevance == 0.2
    for name in ("default", "stm", "ltm"):
        assert "acme" in [r.name for r in config.write_profiles[name].providers]
    shown = paxm("config", "show", "--config", str(cfg))
    assert "SUPERSECRET" not in shown.stdout and "api_key: <redacted>" in shown.stdout

    # A newly enabled provider with a set-up step (SupportsEnsureTarget) runs it; the others do not.
    _EnsuringProvider.ensured.clear()
    args = ["--config", str(cfg), "setup", "--yes", "--force", "--provider", "acme", "--provider", "ens"]
    more = CliRunner().invoke(cli, args)
    assert more.exit_code == 0, more.output
    assert _EnsuringProvider.ensured == ["ens"] and "ensured ens (ensured) target: graph-ens (created)" in more.output
    config = load_config(cfg)
    assert not config.providers["sqlite"].enabled
    for profile in (*config.recall_profiles.values(), *config.write_profiles.values()):
        assert sorted(r.name for r in profile.providers) == ["acme", "ens"]


def test_uninstalled_provider_type_names_its_install_command(cfg: Path) -> None:
    cfg.parent.mkdir(parents=True)
    cfg.write_text("providers:\n  m: {type: nosuch-cloud, enabled: true}\n")
    result = paxm("recall", "--query", "x", "--config", str(cfg))
    assert result.returncode == 1
    # no distribution paxm knows provides it: the message names no invented package
    assert "provider type 'nosuch-cloud' is not installed; install it with: the plugin package" in result.stderr
    assert "paxm-provider-nosuch" not in result.stderr


def test_keyed_provider_without_key_is_refused(cfg: Path) -> None:
    result = paxm("setup", "--yes", "--provider", "zep", "--config", str(cfg))
    assert result.returncode == 1
    assert "provider zep (zep) needs an API key; pass --api-key KEY or set PAXM_API_KEY" in result.stderr
    assert not cfg.exists()


def test_unknown_names_and_missing_yes(cfg: Path) -> None:
    bad = paxm("setup", "--yes", "--provider", "sqlight", "--config", str(cfg))
    assert bad.returncode == 1
    # every installed type is offered, in the order the types declare (sqlite, the default, first)
    assert "unknown setup provider 'sqlight' (options: sqlite, " in bad.stderr
    assert all(name in bad.stderr for name in ("zep", "jsonrpc", "mem0", "memos", "openviking"))
    bad_agent = paxm("setup", "--yes", "--agent", "vim", "--config", str(cfg))
    assert bad_agent.returncode == 1 and "unknown setup agent 'vim' (options: claude, " in bad_agent.stderr
    no_yes = paxm("setup", "--config", str(cfg))
    assert no_yes.returncode == 1
    assert "setup needs --yes when not run in a terminal" in no_yes.stderr
    assert not cfg.exists()


class _FakeIntegration(IntegrationBase):
    name = "fakeharness"
    aliases = ("fake-cli",)
    display_name = "Fake Harness"
    owners = ("fake-plugin",)
    setup_priority = 1

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def default_agent_config(self) -> dict[str, Any]:
        return {"enabled": False, "hooks": {"user_input": {"write": {"enabled": True, "profile": "ltm"}}}}

    def preflight(self, ctx: InstallContext) -> None:
        self.calls.append(("preflight", ctx.owner))

    def install(self, ctx: InstallContext) -> list[str]:
        # Real work a plugin does: write a file beside the config.
        ctx.config.hooks_dir.mkdir(parents=True, exist_ok=True)
        (ctx.config.hooks_dir / "fake-installed").write_text(ctx.owner)
        self.calls.append(("install", ctx.owner))
        ctx.echo("fake hooks written")
        return ["fake hooks written"]


def _fake_integration_plugins(monkeypatch: pytest.MonkeyPatch) -> _FakeIntegration:
    integration = _FakeIntegration()
    use_plugins(monkeypatch, **{"fake-harness": integration_plugin(integration)})
    return integration


def test_plugin_integration_selects_only_its_agent(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    integration = _fake_integration_plugins(monkeypatch)
    runner = CliRunner()
    assert runner.invoke(cli, ["--config", str(cfg), "setup", "--yes", "--agent", "claude"]).exit_code == 0
    bad = runner.invoke(cli, ["--config", str(cfg), "setup", "--yes", "--force", "--integration", "nobody-plugin"])
    assert bad.exit_code == 1 and "use paxm, fake-plugin" in str(bad.exception)
    result = runner.invoke(cli, ["--config", str(cfg), "setup", "--yes", "--force", "--integration", "fake-plugin"])
    assert result.exit_code == 0, result.output
    config = load_config(cfg)
    agent = config.agents["fakeharness"]  # added from the integration's default_agent_config
    assert agent.enabled and agent.integration.owner == "fake-plugin"
    assert agent.hooks["user_input"].write.enabled
    assert config.agents["claude"].enabled  # other agents keep their state
    assert ("install", "fake-plugin") in integration.calls


def test_setup_calls_integration_plugins(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    integration = _fake_integration_plugins(monkeypatch)
    result = CliRunner().invoke(cli, ["--config", str(cfg), "setup", "--yes", "--agent", "fake-cli", "--agent", "pi"])
    assert result.exit_code == 0, result.output
    assert "fake hooks written" in result.output
    assert "Fake Harness: integration installed (owner paxm)" in result.output
    assert "pi: enabled in config; no integration plugin is installed" in result.output
    assert integration.calls == [("preflight", "paxm"), ("install", "paxm")]
    assert (cfg.parent / "hooks" / "fake-installed").read_text() == "paxm"


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
