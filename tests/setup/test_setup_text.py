"""Setup without a terminal (numbered answers on piped stdin) and what setup may enable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from paxm_core.api.errors import UsageError
from paxm_core.api.protocols import ConfigKey, ProviderType
from paxm_core.cli.prompts import Option, parse_multi_select
from paxm_core.config.setup import SetupCatalog, SetupOptions, apply_setup, setup_base_config
from paxm_core.install_hints import known_distributions, provider_install_hint

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"
#: the numbered lists depend on which plugins are offered: pin them (sqlite, zep, Claude Code)
PLUGINS = {"PAXM_LOAD_PLUGINS": "sqlite,zep,claude_code"}


def paxm(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        env={**os.environ, **PLUGINS},
        timeout=60,
    )


OPTIONS = [Option("a", "A", checked=True), Option("b", "B"), Option("c", "C", disabled="not installed")]


def test_numbered_selector_answers() -> None:
    assert parse_multi_select("", OPTIONS) == ["a"]
    assert parse_multi_select("all", OPTIONS) == ["a", "b"]  # a disabled option is never picked
    assert parse_multi_select("NONE", OPTIONS) == []
    assert parse_multi_select(" 2, 1 ", OPTIONS) == ["a", "b"]
    with pytest.raises(ValueError, match="invalid selection '4'"):
        parse_multi_select("1,4", OPTIONS)
    with pytest.raises(ValueError, match="C cannot be chosen: not installed"):
        parse_multi_select("3", OPTIONS)


def test_piped_answers_choose_providers_and_agents(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg" / "config.yaml"
    # providers: sqlite (1); an out-of-range answer is asked again; agents: none; confirm yes
    result = paxm("--config", str(cfg), "setup", "--user-id", "bob", stdin="9\n1\nnone\ny\n")
    assert result.returncode == 0, result.stderr
    assert "invalid selection '9'" in result.stderr
    assert "  1) [x] sqlite (sqlite)" in result.stderr
    assert "Setup summary" in result.stderr and "Agents: none" in result.stderr
    assert f"saved config: {cfg}" in result.stdout
    data = yaml.safe_load(cfg.read_text())
    assert data["providers"]["sqlite"]["enabled"] is True
    assert not any(a.get("enabled") for a in data["agents"].values())
    assert data["write_profiles"]["ltm"]["scope"] == {"type": "personal", "id": "bob"}


def test_piped_key_is_never_echoed_and_a_missing_required_key_gives_up(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    # zep is option 2; its key is required: an empty answer then end of input saves nothing
    result = paxm("--config", str(cfg), "setup", stdin="2\n\n")
    assert result.returncode == 130
    assert "api_key is required" in result.stderr and "nothing was saved" in result.stderr
    assert not cfg.exists()


def test_no_input_at_all_is_not_consent(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    result = paxm("--config", str(cfg), "setup")
    assert result.returncode == 1
    assert "setup needs --yes when not run in a terminal, or answers on stdin" in result.stderr
    assert not cfg.exists()


def test_user_id_moves_the_personal_scopes_of_an_existing_config(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    assert paxm("--config", str(cfg), "setup", "--yes", "--user-id", "first").returncode == 0
    again = paxm("--config", str(cfg), "setup", "--yes", "--force", "--user-id", "alice", "--team-id", "core")
    assert again.returncode == 0, again.stderr
    data = yaml.safe_load(cfg.read_text())
    assert data["identity"]["user_id"] == "alice"
    for name in ("default", "stm", "ltm"):
        assert data["write_profiles"][name]["scope"] == {"type": "personal", "id": "alice"}
    assert data["write_profiles"]["team-core"]["scope"] == {"type": "team", "id": "core"}
    assert all(a["agent_id"].endswith("-alice") for a in data["agents"].values() if "agent_id" in a)


def _teamdb() -> ProviderType:
    return ProviderType(
        "team-db",
        lambda name, config: None,  # type: ignore[arg-type,return-value]
        description="a store not in the default config",
        config_keys=(
            ConfigKey("dsn", "connection string", ask=True),
            ConfigKey("user_id", "whose memories"),
            ConfigKey("schema", "schema", default="public"),
            ConfigKey("pool_size", "pool", kind="int", default=4),
            ConfigKey("timeout", "timeout", kind="duration", default="10s"),
        ),
        locality="keyed",
        setup_priority=5,
    )


def _sqlite_type() -> ProviderType:
    return ProviderType("sqlite", lambda name, config: None)  # type: ignore[arg-type,return-value]


def test_provider_type_not_in_the_defaults_is_added_from_its_declared_defaults(tmp_path: Path) -> None:
    catalog = SetupCatalog({}, {"sqlite": _sqlite_type(), "team-db": _teamdb()})
    config = setup_base_config(tmp_path / "config.yaml", False)
    config, _ = apply_setup(config, SetupOptions(providers=["sqlite", "team-db"], user_id="alice"), catalog)
    added = config.providers["team_db"]
    assert added.type == "team-db" and added.enabled
    assert added.user_id == "alice"  # filled from the identity
    assert added.timeout == 10.0
    assert added.extra == {"schema": "public", "pool_size": 4}
    assert any(r.name == "team_db" for r in config.write_profiles["default"].providers)
    for profile in ("default", "stm", "ltm"):
        assert config.write_profiles[profile].scope.id in ("", "alice")


def test_a_first_setup_enables_the_detected_harnesses_whose_integration_is_installed(
    tmp_path: Path, isolated_home: Path
) -> None:
    bare = SetupCatalog({}, {"sqlite": _sqlite_type()})
    config = setup_base_config(tmp_path / "config.yaml", False)
    config, agents = apply_setup(config, SetupOptions(providers=["sqlite"]), bare)
    assert agents == [] and not config.agents["codex"].enabled  # upstream's default, nothing to connect it
    from paxm_integration_codex.integration import CodexIntegration

    with_codex = SetupCatalog({"codex": CodexIntegration()}, {"sqlite": _sqlite_type()})
    config = setup_base_config(tmp_path / "config.yaml", False)
    config, agents = apply_setup(config, SetupOptions(providers=["sqlite"]), with_codex)
    assert agents == [] and not config.agents["codex"].enabled  # installed, but Codex is not on this machine
    (isolated_home / ".codex").mkdir()
    config = setup_base_config(tmp_path / "config.yaml", False)
    config, agents = apply_setup(config, SetupOptions(providers=["sqlite"]), with_codex)
    assert agents == ["codex"] and config.agents["codex"].enabled


def test_an_uninstalled_type_cannot_be_enabled(tmp_path: Path) -> None:
    catalog = SetupCatalog({}, {"sqlite": _sqlite_type()})
    # a config that lists it (written where the plugin was installed)
    path = tmp_path / "config.yaml"
    path.write_text("providers:\n  sqlite: {enabled: true}\n  zep: {type: zep}\n")
    config = setup_base_config(path, True, catalog.provider_catalog())
    with pytest.raises(UsageError, match="provider zep cannot be enabled: its type 'zep' is not installed") as err:
        apply_setup(config, SetupOptions(providers=["zep"], api_key="k"), catalog)
    assert "pip install paxm-provider-zep" in str(err.value) and "paxm[zep]" in str(err.value)
    # the built-in defaults list only installed types: the name is unknown, with the same advice
    config = setup_base_config(tmp_path / "config.yaml", False, catalog.provider_catalog())
    with pytest.raises(UsageError, match="unknown setup provider 'zep'") as unknown_type:
        apply_setup(config, SetupOptions(providers=["zep"], api_key="k"), catalog)
    assert "pip install paxm-provider-zep" in str(unknown_type.value)
    with pytest.raises(UsageError, match="unknown setup provider 'nosuch'") as unknown:
        apply_setup(config, SetupOptions(providers=["nosuch"]), catalog)
    assert "no paxm distribution is known to provide type 'nosuch'" in str(unknown.value)
    assert "paxm-provider-nosuch" not in str(unknown.value)


def test_install_hints_name_only_distributions_paxm_declares() -> None:
    known: dict[str, Any] = known_distributions()
    assert known.get("paxm-provider-zep") == "zep"
    assert provider_install_hint("zep").startswith("Install it with: pip install paxm-provider-zep")
    assert "pip install" not in provider_install_hint("nosuch-cloud")


def test_piped_env_reference_for_a_secret_is_stored_as_the_reference(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[2] / "providers" / "paxm-provider-zep" / "tests"))
    from zep_fake import ZepFake

    fake = ZepFake()
    try:
        cfg = tmp_path / "config.yaml"
        env = {**os.environ, **PLUGINS, "MY_ZEP_KEY": fake.state.api_key}
        result = subprocess.run(
            [sys.executable, "-c", ENTRY, "--config", str(cfg), "setup", "--user-id", "carol"]
            + ["--base-url", fake.base_url],
            input="1,2\nenv:MY_ZEP_KEY\nnone\ny\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    finally:
        fake.close()
    assert result.returncode == 0, result.stderr
    assert fake.state.api_key not in result.stdout + result.stderr
    assert "zep (zep): api_key: env:MY_ZEP_KEY" in result.stderr  # a reference is no secret
    data = yaml.safe_load(cfg.read_text())
    assert data["providers"]["zep"]["api_key"] == "env:MY_ZEP_KEY"
    assert fake.base_url in data["providers"]["zep"]["base_url"]
    assert data["providers"]["zep"]["enabled"] and data["providers"]["sqlite"]["enabled"]
