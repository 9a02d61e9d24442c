"""The ``kilo`` integration (Kilo Code): OpenCode's plugin in ``~/.config/kilo``, set up and removed exactly."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest import paxm_cli
from paxm_core.config import load_config
from paxm_core.integration import EVENT_USER_INPUT, HookResult, InstallContext, Integration
from paxm_core.plugins import get_plugin_manager
from paxm_integration_opencode import KiloIntegration, OpenCodeIntegration
from paxm_integration_opencode.plugin import plugin_file

#: a Kilo config dir as a user has it: their config, their own plugin, Kilo's own files
KILO_JSON = {
    "$schema": "https://app.kilo.ai/config.json",
    "model": "anthropic/claude-sonnet-4",
    "autoupdate": False,
    "mcp": {"fs": {"type": "local", "command": ["npx", "fs-mcp"]}},
}


def _user_dir(isolated_home: Path) -> tuple[Path, dict[Path, bytes]]:
    kilo = isolated_home / ".config" / "kilo"
    (kilo / "plugins").mkdir(parents=True)
    (kilo / "kilo.json").write_text(json.dumps(KILO_JSON, indent=2) + "\n")
    (kilo / "plugins" / "mine.js").write_text("export const Mine = async () => ({})\n")
    (kilo / "agent-manager.json").write_text('{"worktrees": []}\n')
    return kilo, {p: p.read_bytes() for p in kilo.rglob("*") if p.is_file()}


def test_registered_with_its_own_name_and_aliases() -> None:
    pm = get_plugin_manager()
    for spelling in ("kilo", "kilo-code", "Kilocode"):
        found = pm.integration(spelling)
        assert isinstance(found, KiloIntegration), spelling
    assert isinstance(pm.integration("opencode"), OpenCodeIntegration)
    assert not isinstance(pm.integration("opencode"), KiloIntegration)
    kilo = KiloIntegration()
    assert isinstance(kilo, Integration)
    assert (kilo.name, kilo.display_name, kilo.label) == ("kilo", "Kilo Code", "Kilo Code")


def test_config_dir_resolution(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    kilo = KiloIntegration()
    assert kilo.config_dir() == isolated_home / ".config" / "kilo"
    monkeypatch.setenv("XDG_CONFIG_HOME", "/xdg")
    assert kilo.config_dir() == Path("/xdg/kilo")
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", "/oc")  # OpenCode's variable is not Kilo's
    assert kilo.config_dir() == Path("/xdg/kilo")
    monkeypatch.setenv("KILO_CONFIG_DIR", "/k")
    assert kilo.plugin_path() == Path("/k/plugins/paxm.js")
    monkeypatch.setenv("PAXM_KILO_CONFIG_DIR", "/mine")
    assert kilo.config_dir() == Path("/mine")


def test_setup_and_uninstall_leave_the_users_kilo_files_byte_identical(tmp_path: Path, isolated_home: Path) -> None:
    kilo_dir, before = _user_dir(isolated_home)
    opencode_plugin = isolated_home / ".config" / "opencode" / "plugins" / "paxm.js"
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", "kilo-code", "--provider", "sqlite")
    assert done.returncode == 0, done.stderr
    path = kilo_dir / "plugins" / "paxm.js"
    assert f"installed the paxm Kilo Code plugin at {path}" in done.stdout
    assert f"cd {kilo_dir} && npm install @kilocode/plugin" in done.stdout  # the offline-stall advice
    assert not opencode_plugin.exists()  # only the selected harness
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    source = path.read_text()
    assert source.splitlines()[0].endswith("`paxm uninstall --agent kilo` removes it.")
    settings: dict[str, Any] | None = plugin_file().embedded_settings(source)
    assert settings is not None and settings["target"] == "kilo"
    assert sorted(settings["commands"]) == ["session_start", "turn_end", "user_input"]
    for argv in settings["commands"].values():
        assert argv[argv.index("--target") + 1] == "kilo"
    assert {p: p.read_bytes() for p in kilo_dir.rglob("*") if p.is_file() and p != path} == before

    config = load_config(tmp_path / "paxm" / "config.yaml")
    assert config.agents["kilo"].enabled and not config.agents["opencode"].enabled
    findings = KiloIntegration().check(InstallContext(config=config))
    assert [f.level for f in findings] == ["ok", "warn"]
    assert "@kilocode/plugin" in findings[1].message

    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", "kilo", "--provider", "sqlite", "--force")
    assert f"the paxm Kilo Code plugin at {path} is up to date" in done.stdout

    done = paxm_cli(tmp_path, "uninstall", "--agent", "kilo", "--yes")
    assert done.returncode == 0, done.stderr
    assert f"removed the paxm Kilo Code plugin {path}" in done.stdout
    assert {p: p.read_bytes() for p in kilo_dir.rglob("*") if p.is_file()} == before
    assert not load_config(tmp_path / "paxm" / "config.yaml").agents["kilo"].enabled


def test_output_is_the_plain_context_like_opencode() -> None:
    kilo = KiloIntegration()
    result = HookResult(target="kilo", event=EVENT_USER_INPUT, recall_context="<paxm-recall>x</paxm-recall>")
    assert kilo.hook_output(result, "text") == "<paxm-recall>x</paxm-recall>"
    event = kilo.decode("chat.message", b'{"prompt": "hi", "session_id": "s"}')
    assert (event.target, event.event, event.prompt) == ("kilo", EVENT_USER_INPUT, "hi")
