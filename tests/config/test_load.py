"""Locating, loading, normalizing and saving config files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from paxm_core.config import (
    ConfigError,
    ProviderConfig,
    RouteConfig,
    config_exists,
    default_config,
    load_config,
    resolve_config_path,
    save_config,
)
from paxm_core.config.catalog import ProviderCatalog
from paxm_core.config.codec import dump_config
from paxm_core.config.normalize import normalize, slug_id
from paxm_core.plugins import installed_provider_catalog

DATA = Path(__file__).parent / "data"
#: the provider types of this workspace, as the runtime and the CLI hand them to the loader
TYPES = installed_provider_catalog()


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _upstream(tmp_path: Path) -> Path:
    text = (DATA / "upstream-config.yaml").read_text(encoding="utf-8").replace("__DIR__", str(tmp_path / "cfg"))
    return _write(tmp_path / "cfg" / "config.yaml", text)


def test_upstream_format_file_loads_with_upstream_values(tmp_path: Path) -> None:
    config = load_config(_upstream(tmp_path))
    assert config.exists
    assert config.identity.user_id == "alice"
    assert list(config.enabled_providers()) == ["sqlite"]
    assert config.providers["sqlite"].path == str(tmp_path / "cfg" / "memory.sqlite")
    assert config.providers["mem0_cloud"].option("infer") is False
    assert config.providers["jsonrpc"].timeout == 30.0
    passive = config.recall_profiles["passive"]
    assert (passive.max_results, passive.thresholds.min_relevance, passive.tiers) == (2, 0.75, ["ltm"])
    assert passive.providers == [RouteConfig(name="sqlite", required=True, weight=1.0, timeout=0.25)]
    assert config.recall_profiles["passive_initial"].max_results == 5
    assert config.write_profiles["stm"].expires_after == 24 * 3600
    assert config.write_profiles["ltm"].expires_after is None
    assert config.write_profiles["default"].providers[0].timeout == 30.0
    codex = config.agents["codex"]
    assert codex.integration.owner == "paxm"
    assert codex.passive_write_started_at == "2026-01-02T03:04:05.123456789Z"
    user_input = codex.hooks["user_input"]
    assert user_input.recall.timeout_extra == pytest.approx(0.1)
    assert user_input.recall.initial is not None and user_input.recall.initial.insertion.min_score == 0.35
    assert user_input.write.buffer.flush_count == 10
    assert config.agents["cursor"].hooks["user_input"].recall.enabled is False
    assert config.capture_queue.max_episode_age == 60.0
    assert config.capture_queue.provider_concurrency == {"default": 4, "sqlite": 1}
    assert config.telemetry.max_event_file_bytes == 1 << 20


def test_upstream_file_round_trips_through_save(tmp_path: Path) -> None:
    original = load_config(_upstream(tmp_path))
    copy_path = save_config(original, tmp_path / "copy" / "config.yaml")
    again = load_config(copy_path)
    assert again == original
    text = copy_path.read_text()
    assert "expires_after: 24h\n" in text and "timeout: 250ms" in text


def test_defaults_match_upstream_template(tmp_path: Path) -> None:
    """The built-in defaults agree with the hand-written upstream file on every shared key."""
    upstream = load_config(_upstream(tmp_path), provider_types=TYPES)
    built_in = normalize(default_config(tmp_path / "cfg" / "config.yaml", TYPES))
    assert built_in.providers == upstream.providers
    assert built_in.recall_profiles == upstream.recall_profiles
    assert built_in.capture_queue == upstream.capture_queue
    assert built_in.telemetry == upstream.telemetry
    codex = built_in.agents["codex"]
    codex.passive_write_started_at, codex.integration.owner = "2026-01-02T03:04:05.123456789Z", "paxm"
    codex.agent_id = "codex-alice"
    assert codex == upstream.agents["codex"]
    assert set(built_in.agents) == {
        "opencode",
        "claude",
        "codex",
        "pi",
        "cursor",
        "trae",
        "trae-cn",
        "kimi",
        "zcode",
        "kiro",
    }  # fmt: skip  (no "cline": paxm's Cline integration brings its own defaults)
    assert set(built_in.agents["claude"].hooks) == {
        "tool_use",
        "tool_failure",
        "pre_tool",  # paxm's own: point-of-action recall (docs/freshness.md)
        "session_start",
        "user_input",
        "turn_end",
    }
    assert built_in.agents["pi"].hooks["user_input"].write.enabled is False
    assert [n for n, a in built_in.agents.items() if a.enabled] == ["codex"]


def test_location_precedence(isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_config_path() == isolated_home / ".config" / "paxm" / "config.yaml"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert resolve_config_path() == isolated_home / ".config" / "paxm" / "config.yaml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert resolve_config_path() == tmp_path / "xdg" / "paxm" / "config.yaml"
    monkeypatch.setenv("PAXM_CONFIG", "~/env.yaml")
    assert resolve_config_path() == isolated_home / "env.yaml"
    assert resolve_config_path(str(tmp_path / "flag.yaml")) == tmp_path / "flag.yaml"


def test_paxm_config_env_is_the_standard_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAXM_CONFIG", str(tmp_path / "env" / "config.yaml"))
    config = load_config()
    assert config.path == tmp_path / "env" / "config.yaml"
    # As upstream: data follows XDG for the standard location, even when it comes from the env.
    assert config.providers["sqlite"].path.endswith(".local/share/paxm/memory.sqlite")


def test_legacy_json_sibling_is_read(isolated_home: Path) -> None:
    cfg_dir = isolated_home / ".config" / "paxm"
    _write(cfg_dir / "config.json", json.dumps({"identity": {"user_id": "Bob Smith"}}))
    assert config_exists()
    config = load_config()
    assert config.exists and config.identity.user_id == "bob-smith"
    assert config.path == cfg_dir / "config.yaml"


def test_json_path_reads_and_writes_json(tmp_path: Path) -> None:
    target = tmp_path / "c" / "paxm.json"
    config = load_config(target)
    config.providers["sqlite"].api_key = "k"
    save_config(config, target)
    data = json.loads(target.read_text())
    assert data["providers"]["sqlite"]["enabled"] is True
    assert data["write_profiles"]["stm"]["expires_after"] == "24h"
    assert load_config(target) == config


def test_legacy_shapes_are_folded(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "legacy" / "config.json",
        json.dumps(
            {
                "providers": {
                    "local": {"type": "local", "enabled": True, "path": "~/mem.jsonl", "weight": 2},
                    "mem0": {"enabled": True, "read": True, "write": False, "required": False},
                    "off": {"type": "zep", "enabled": False},
                },
                "hooks": {"codex": {"enabled": True, "events": {"user_prompt": {"recall": {"enabled": True}}}}},
            }
        ),
    )
    config = load_config(path)
    assert "local" not in config.providers
    sqlite = config.providers["sqlite"]
    assert sqlite.type == "sqlite" and sqlite.path == str(Path.home() / "mem.sqlite")
    assert config.providers["mem0"].type == "mem0"
    assert "weight" not in sqlite.extra and "read" not in config.providers["mem0"].extra
    default = {r.name: r for r in config.recall_profiles["default"].providers}
    assert default["sqlite"] == RouteConfig(name="sqlite", required=True, weight=2.0)
    assert default["mem0"].required is False
    assert [r.name for r in config.write_profiles["default"].providers] == ["sqlite"]
    assert [r.name for r in config.write_profiles["stm"].providers] == ["sqlite"]
    assert config.write_profiles["stm"].expires_after == 86400
    codex = config.agents["codex"]
    assert codex.enabled and set(codex.hooks) == {"user_input"}
    assert codex.hooks["user_input"].recall.initial is not None
    assert config.hooks == {}


def test_sparse_config_gets_synthesized_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the cloud timeout/thresholds come from the provider type's own locality, not a core table
    from paxm_core.api.protocols import ProviderType

    cloud_type = ProviderType("mem0-cloud", lambda name, cfg: None, locality="cloud")  # type: ignore[arg-type,return-value]
    types = ProviderCatalog.of({"mem0-cloud": cloud_type})
    path = _write(
        tmp_path / "s" / "config.yaml",
        """
identity: {user_id: "Ann Lee"}
providers:
  sqlite: {enabled: true}
  cloud: {type: mem0-cloud, enabled: true, api_key: sk-1}
recall_profiles:
  default:
    providers: [{name: sqlite, required: true}, {name: cloud}]
  passive:
    providers: [{name: sqlite}, {name: cloud, timeout: 250ms}]
write_profiles:
  default:
    providers: [{name: sqlite, required: true}]
""",
    )
    config = load_config(path, provider_types=types)
    assert config.identity.user_id == "ann-lee"
    passive = {r.name: r for r in config.recall_profiles["passive"].providers}
    assert passive["sqlite"].timeout == 0.25 and passive["sqlite"].thresholds is None
    assert passive["cloud"].timeout == 0.8  # the sqlite default is raised for managed clouds
    assert passive["cloud"].thresholds is not None and passive["cloud"].thresholds.min_score == 0.2
    assert config.recall_profiles["default"].thresholds.min_relevance == 0.25
    assert config.recall_profiles["default"].providers[1].weight == 1.0
    assert config.recall_profiles["passive_initial"].max_results == 5
    assert config.write_profiles["stm"].tier == "stm" and config.write_profiles["stm"].expires_after == 86400
    assert config.write_profiles["ltm"].scope.type == "personal" and config.write_profiles["ltm"].scope.id == "ann-lee"
    assert config.agents["claude"].agent_id == "claude-ann-lee"


def test_unknown_keys_ignored_but_kept_for_providers(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "u" / "config.yaml",
        "future_key: 1\nproviders:\n  mine:\n    type: acme\n    enabled: false\n    region: eu\n    nested: {a: 1}\n",
    )
    config = load_config(path)
    assert config.providers["mine"].extra == {"region": "eu", "nested": {"a": 1}}
    save_config(config, path)
    assert load_config(path).providers["mine"].option("region") == "eu"
    assert "future_key" not in path.read_text()


def test_save_is_0600_even_over_a_0644_file(tmp_path: Path) -> None:
    target = _write(tmp_path / "p" / "config.yaml", "providers: {}\n")
    os.chmod(target, 0o644)
    old = os.umask(0)
    try:
        save_config(load_config(target), target)
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["config.yaml"]


def test_invalid_config_never_overwrites_a_valid_file(tmp_path: Path) -> None:
    target = tmp_path / "v" / "config.yaml"
    config = load_config(target)
    save_config(config, target)
    before = target.read_bytes()
    config.write_profiles["ltm"].expires_after = 60.0
    with pytest.raises(ConfigError, match=r"write_profiles\.ltm\.expires_after"):
        save_config(config, target)
    assert target.read_bytes() == before
    assert [p.name for p in target.parent.iterdir()] == ["config.yaml"]


def test_redaction_in_to_json(tmp_path: Path) -> None:
    config = load_config(tmp_path / "r" / "config.yaml")
    config.providers["zep"] = ProviderConfig(
        type="zep",
        api_key="zk-SECRET",
        env={"TOKEN": "env-SECRET"},
        extra={"client_secret": "x-SECRET", "region": "eu"},
    )
    shown = json.dumps(dump_config(config))
    assert "SECRET" not in shown and shown.count("<redacted>") == 3 and '"region": "eu"' in shown
    raw = dump_config(config, redact=False)["providers"]["zep"]
    assert raw["api_key"] == "zk-SECRET" and raw["env"] == {"TOKEN": "env-SECRET"}


def test_normalize_is_idempotent_and_pure(tmp_path: Path) -> None:
    config = load_config(_upstream(tmp_path))
    config.hooks = {}
    once = normalize(config)
    assert normalize(once) == once
    raw = default_config(tmp_path / "x.yaml")
    normalize(raw)
    assert raw.identity.user_id == ""  # the input is not modified


@pytest.mark.parametrize(
    ("raw", "slug"), [("Todd S.", "todd-s"), ("  --A__b--  ", "a-b"), ("Ünïcode 名前", "ünïcode-名前"), ("!!!", "")]
)
def test_slug_id(raw: str, slug: str) -> None:
    assert slug_id(raw) == slug


def test_directory_or_unwritable_paths_are_config_errors(tmp_path: Path) -> None:
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(ConfigError, match=r"dir\.yaml: is not a file"):
        load_config(tmp_path / "dir.yaml")
    blocker = _write(tmp_path / "blocker", "not a directory")
    with pytest.raises(ConfigError, match=r"cannot write the config"):
        save_config(load_config(tmp_path / "x" / "config.yaml"), blocker / "config.yaml")
    assert blocker.read_text() == "not a directory"


def test_yaml_scalars_read_like_upstream(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "y" / "config.yaml",
        """
identity: {user_id: no}
providers:
  sqlite: {enabled: yes}
  zep: {type: zep, enabled: off, user_id: on}
agents:
  codex:
    enabled: true
    passive_write_started_at: 2026-01-02T03:04:05.5Z
""",
    )
    config = load_config(path)
    assert config.identity.user_id == "no"
    assert config.providers["sqlite"].enabled is True and config.providers["zep"].enabled is False
    assert config.providers["zep"].user_id == "on"
    assert config.agents["codex"].passive_write_started_at == "2026-01-02T03:04:05.5Z"
    save_config(config, path)
    assert load_config(path) == config


def test_redaction_reaches_args_urls_and_nested_options(tmp_path: Path) -> None:
    config = load_config(tmp_path / "r" / "config.yaml")
    config.providers["rpc"] = ProviderConfig(
        type="jsonrpc",
        command="plugin",
        args=["serve", "--api-key", "A-SECRET", "--token=B-SECRET", "--verbose"],
        base_url="https://bob:C-SECRET@example.test/api",
        extra={"headers": {"Authorization": "Bearer D-SECRET", "Accept": "json"}, "dsn": "pg://u:E-SECRET@db/x"},
    )
    shown = json.dumps(dump_config(config))
    assert "SECRET" not in shown
    rpc = dump_config(config)["providers"]["rpc"]
    assert rpc["args"] == ["serve", "--api-key", "<redacted>", "--token=<redacted>", "--verbose"]
    assert rpc["base_url"] == "https://bob:<redacted>@example.test/api"
    assert rpc["headers"] == {"Authorization": "<redacted>", "Accept": "json"}
    assert dump_config(config, redact=False)["providers"]["rpc"]["args"][2] == "A-SECRET"


def test_relative_config_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = load_config("rel/config.yaml")
    assert config.path == tmp_path / "rel" / "config.yaml"
    assert config.providers["sqlite"].path == str(tmp_path / "rel" / "memory.sqlite")
    assert config.hooks_dir == tmp_path / "rel" / "hooks"


@pytest.mark.parametrize("name", ["config.json", "config.yaml"])
def test_absurd_nesting_is_a_config_error(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path / "n" / name, "[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError, match="nested too deeply|nesting depth"):
        load_config(path)
