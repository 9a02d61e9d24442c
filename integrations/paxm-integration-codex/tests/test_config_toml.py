"""Golden merge/unmerge of paxm's hooks into realistic Codex ``config.toml`` files.

``golden/<case>/before.toml`` is the user's file (absent for ``fresh``); ``installed.toml`` is
what ``install`` must leave; uninstall must give back ``before.toml`` byte for byte (or, for
``previous-paxm``, ``uninstalled.toml``: upstream's entries are gone too).  Machine paths are
written as ``{PYTHON}``, ``{CLIENT}``, ``{CONFIG}``, ``{CONFIGDIR}``.  Regenerate after an
intended change with ``PAXM_REGEN_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import tomlkit

from paxm_core.api.errors import IntegrationError
from paxm_core.config.defaults import default_config
from paxm_core.integration import InstallContext, client_path, interpreter_path
from paxm_integration_codex import CodexIntegration, config_toml

GOLDEN = Path(__file__).parent / "golden"

CASES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    codex_home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.setenv("PAXM_CODEX_BINARY", str(tmp_path / "no-codex"))  # no trust step: pure file merge
    return codex_home / "config.toml", tmp_path / "paxm" / "config.yaml"


def _subst(text: str, paxm_config: Path) -> str:
    return (
        text.replace("{PYTHON}", interpreter_path())
        .replace("{CLIENT}", str(client_path()))
        .replace("{CONFIGDIR}", str(paxm_config.parent))
        .replace("{CONFIG}", str(paxm_config))
    )


def _unsubst(text: str, paxm_config: Path) -> str:
    return (
        text.replace(str(client_path()), "{CLIENT}")
        .replace(interpreter_path(), "{PYTHON}")
        .replace(str(paxm_config), "{CONFIG}")
        .replace(str(paxm_config.parent), "{CONFIGDIR}")
    )


def _golden(case: str, name: str, actual: str, paxm_config: Path) -> str:
    path = GOLDEN / case / name
    if os.environ.get("PAXM_REGEN_GOLDEN"):
        path.write_text(_unsubst(actual, paxm_config))
    return _subst(path.read_text(), paxm_config)


@pytest.mark.parametrize("case", CASES)
def test_golden_merge_and_unmerge(case: str, env: tuple[Path, Path]) -> None:
    codex_config, paxm_config = env
    before_file = GOLDEN / case / "before.toml"
    before = _subst(before_file.read_text(), paxm_config) if before_file.exists() else None
    if before is not None:
        codex_config.parent.mkdir(parents=True)
        codex_config.write_text(before)
    config = default_config(paxm_config)
    integration = CodexIntegration()
    lines = integration.install(InstallContext(config=config))
    assert any("installed paxm hooks" in line for line in lines)
    installed = codex_config.read_text()
    assert installed == _golden(case, "installed.toml", installed, paxm_config)
    assert stat.S_IMODE(os.stat(codex_config).st_mode) == 0o600
    tomlkit.parse(installed)  # still valid TOML
    # idempotent: a second install changes nothing
    assert any("up to date" in line for line in integration.install(InstallContext(config=config)))
    assert codex_config.read_text() == installed
    backup = codex_config.with_name("config.toml.paxm.bak")
    if before is not None:
        assert backup.read_text() == before
    else:
        assert not backup.exists()
    integration.uninstall(InstallContext(config=config))
    after = codex_config.read_text()
    expected_file = GOLDEN / case / "uninstalled.toml"
    if expected_file.exists() or case == "previous-paxm":
        assert after == _golden(case, "uninstalled.toml", after, paxm_config)
    else:
        assert after == (before or "")
    if before is not None:
        assert backup.read_text() == before  # the backup is never overwritten


def test_plugin_owner_removes_config_hooks(env: tuple[Path, Path]) -> None:
    codex_config, paxm_config = env
    codex_config.parent.mkdir(parents=True)
    codex_config.write_text((GOLDEN / "other-hooks" / "before.toml").read_text())
    config = default_config(paxm_config)
    integration = CodexIntegration()
    integration.install(InstallContext(config=config))
    assert "client.py" in codex_config.read_text()
    lines = integration.install(InstallContext(config=config, owner="codex-plugin"))
    assert codex_config.read_text() == (GOLDEN / "other-hooks" / "before.toml").read_text()
    assert any("plugin owns them" in line for line in lines)
    generated = paxm_config.parent / "integrations" / "codex-plugin"
    launcher = (generated / "plugins" / "paxm-memory" / "hooks" / "paxm-hook.sh").read_text()
    assert f"PAXM_CONFIG_FILE={paxm_config}" in launcher and "PAXM_INTEGRATION_OWNER=codex-plugin" in launcher
    assert stat.S_IMODE(os.stat(generated).st_mode) == 0o700
    assert any("codex plugin add paxm-memory@paxm" in line for line in lines)  # codex absent: the exact steps
    integration.uninstall(InstallContext(config=config))
    assert not generated.exists()


def test_invalid_toml_is_never_rewritten(env: tuple[Path, Path]) -> None:
    codex_config, paxm_config = env
    codex_config.parent.mkdir(parents=True)
    codex_config.write_text("model = \n[hooks\n")
    with pytest.raises(IntegrationError, match="not valid TOML"):
        CodexIntegration().preflight(InstallContext(config=default_config(paxm_config)))
    codex_config.write_text('hooks = "nope"\n')
    with pytest.raises(IntegrationError, match="must be a table"):
        CodexIntegration().install(InstallContext(config=default_config(paxm_config)))
    assert codex_config.read_text() == 'hooks = "nope"\n'


def test_paths_honour_the_environment(tmp_path: Path) -> None:
    assert config_toml.config_path({"PAXM_CODEX_CONFIG": str(tmp_path / "x.toml")}) == tmp_path / "x.toml"
    assert config_toml.config_path({"CODEX_HOME": str(tmp_path)}) == tmp_path / "config.toml"
    assert config_toml.config_path({}) == Path.home() / ".codex" / "config.toml"


def test_only_this_configs_client_is_paxm(tmp_path: Path) -> None:
    mine = tmp_path / "paxm" / "config.yaml"
    cmd = f"/venv/bin/python -I -S /x/paxm_core/hooks/client.py --config {mine} --target codex --event Stop"
    assert config_toml.is_paxm_command(cmd, mine)
    assert not config_toml.is_paxm_command(cmd.replace("--target codex", "--target claude"), mine)
    assert not config_toml.is_paxm_command(cmd, tmp_path / "other" / "config.yaml")
    assert not config_toml.is_paxm_command("make lint", mine)


def test_doctor_without_codex_on_path(env: tuple[Path, Path]) -> None:
    codex_config, paxm_config = env
    config = default_config(paxm_config)
    integration = CodexIntegration()
    missing = integration.check(InstallContext(config=config))
    assert [f.level for f in missing] == ["error"] and "not installed" in missing[0].message
    integration.install(InstallContext(config=config))
    findings = integration.check(InstallContext(config=config))
    assert findings[0].level == "ok"
    assert findings[-1].level == "warn" and "/hooks" in findings[-1].fix  # trust cannot be verified or recorded


def test_write_config_sets_the_mode_on_its_new_file_never_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, victim: Path
) -> None:
    # another process swaps paxm's temp file for a link between its write and its rename
    home = tmp_path / "codex"
    home.mkdir()
    real_fsync = os.fsync

    def fsync_and_plant(fd: int) -> None:
        real_fsync(fd)
        for tmp in home.glob(".config*tmp"):
            tmp.unlink()
            tmp.symlink_to(victim)

    monkeypatch.setattr(os, "fsync", fsync_and_plant)
    config_toml.write_config(home / "config.toml", tomlkit.parse('model = "x"\n'), None)
    assert victim.read_text() == "not paxm's\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_pre_tool_use_is_installed_only_when_pre_tool_recall_is_on(env: tuple[Path, Path]) -> None:
    import tomllib

    from paxm_core.config.defaults import pre_tool_recall
    from paxm_core.config.model import AgentHookConfig

    codex_config, paxm_config = env
    config = default_config(paxm_config)
    integration = CodexIntegration()
    integration.install(InstallContext(config=config))
    assert "PreToolUse" not in tomllib.loads(codex_config.read_text())["hooks"]  # upstream's defaults: off
    config.agents["codex"].hooks["pre_tool"] = AgentHookConfig(recall=pre_tool_recall())
    integration.install(InstallContext(config=config))
    [group] = tomllib.loads(codex_config.read_text())["hooks"]["PreToolUse"]
    assert group["matcher"] == "Bash|apply_patch|Edit|Write"
    assert "--target codex" in group["hooks"][0]["command"] and "PreToolUse" in group["hooks"][0]["command"]
    integration.uninstall(InstallContext(config=config))
    assert "PreToolUse" not in codex_config.read_text()
