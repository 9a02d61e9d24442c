"""Registration, paths, ownership, native output and doctor findings of the IDE integrations."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from paxm_core.api.errors import IntegrationError
from paxm_core.config.defaults import default_config
from paxm_core.integration import HookResult, InstallContext, Integration, hook_command_line
from paxm_core.plugins import get_plugin_manager
from paxm_integration_ide import (
    CursorIntegration,
    KiroIntegration,
    TraeCNIntegration,
    TraeIntegration,
    ZCodeIntegration,
)
from paxm_integration_ide.entries import is_paxm_command


def _result(event: str = "user_input", **fields: object) -> HookResult:
    return HookResult(target="x", event=event, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("cursor", CursorIntegration),
        ("trae", TraeIntegration),
        ("trae-cn", TraeCNIntegration),
        ("Trae CN", TraeCNIntegration),
        ("kiro", KiroIntegration),
        ("kiro-cli", KiroIntegration),
        ("zcode", ZCodeIntegration),
    ],
)
def test_registered_through_the_entry_point(name: str, cls: type) -> None:
    found = get_plugin_manager().integration(name)
    assert isinstance(found, cls) and isinstance(found, Integration)


def test_kimi_and_cline_are_not_this_distributions() -> None:
    """They have their own distributions; this one must not claim their names."""
    from paxm_integration_ide import paxm_register_integrations

    names: list[str] = []
    paxm_register_integrations(lambda integration: names.extend([integration.name, *integration.aliases]))
    assert not {"kimi", "kimi-code", "cline"} & set(names)


def test_default_paths_and_overrides(isolated_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert CursorIntegration().hooks_path() == isolated_home / ".cursor" / "hooks.json"
    assert CursorIntegration().mcp_path() == isolated_home / ".cursor" / "mcp.json"
    assert TraeIntegration().hooks_path() == isolated_home / ".trae" / "hooks.json"
    assert TraeCNIntegration().hooks_path() == isolated_home / ".trae-cn" / "hooks.json"
    assert KiroIntegration().agent_path() == isolated_home / ".kiro" / "agents" / "paxm.json"
    assert KiroIntegration().mcp_path() == isolated_home / ".kiro" / "settings" / "mcp.json"
    assert ZCodeIntegration().config_path() == isolated_home / ".zcode" / "cli" / "config.json"
    if sys.platform.startswith("linux"):  # the desktop app's user dir follows XDG_CONFIG_HOME
        assert TraeIntegration().mcp_path() == isolated_home / ".config" / "Trae" / "User" / "mcp.json"
        assert TraeCNIntegration().mcp_path() == isolated_home / ".config" / "Trae CN" / "User" / "mcp.json"
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        assert TraeIntegration().mcp_path() == tmp_path / "xdg" / "Trae" / "User" / "mcp.json"
    for variable, get in [
        ("PAXM_CURSOR_HOOKS", lambda: CursorIntegration().hooks_path()),
        ("PAXM_CURSOR_MCP", lambda: CursorIntegration().mcp_path()),
        ("PAXM_TRAE_HOOKS", lambda: TraeIntegration().hooks_path()),
        ("PAXM_TRAE_MCP", lambda: TraeIntegration().mcp_path()),
        ("PAXM_TRAE_CN_HOOKS", lambda: TraeCNIntegration().hooks_path()),
        ("PAXM_TRAE_CN_MCP", lambda: TraeCNIntegration().mcp_path()),
        ("PAXM_KIRO_AGENT", lambda: KiroIntegration().agent_path()),
        ("PAXM_KIRO_MCP", lambda: KiroIntegration().mcp_path()),
        ("PAXM_ZCODE_CONFIG", lambda: ZCodeIntegration().config_path()),
    ]:
        monkeypatch.setenv(variable, "~/elsewhere/x.json")
        assert get() == isolated_home / "elsewhere" / "x.json", variable
        monkeypatch.delenv(variable)


def test_detect(isolated_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert CursorIntegration().detect() is None
    (isolated_home / ".kiro").mkdir()
    assert KiroIntegration().detect() == str(isolated_home / ".kiro")
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "bin" / "cursor"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert CursorIntegration().detect() == str(exe)


def test_is_paxm_command(tmp_path: Path) -> None:
    config = tmp_path / "paxm" / "config.yaml"
    ours = hook_command_line(config, "cursor", "user_input", mode="cursor")
    assert is_paxm_command(ours, config, "cursor")
    assert not is_paxm_command(ours, config, "zcode")  # another agent's
    assert not is_paxm_command(ours, tmp_path / "other.yaml", "cursor")  # another paxm config's
    assert is_paxm_command(f"'{config.parent}/hooks/cursor-user_input'", config, "cursor")  # upstream's shim
    assert not is_paxm_command(f"'{config.parent}/hooks/trae-cn-user_input'", config, "trae")
    for other in ("./audit.sh", "", "'unbalanced", "python -m paxm_core --target cursor"):
        assert not is_paxm_command(other, config, "cursor")


def test_cursor_output() -> None:
    cursor = CursorIntegration()
    # Cursor shows no context on prompt submission; other events carry it
    assert json.loads(cursor.hook_output(_result(recall_context="<r>"), "cursor")) == {"continue": True}
    out = json.loads(cursor.hook_output(_result("session_start", session_context="<s>"), "cursor"))
    assert out == {"continue": True, "additional_context": "<s>"}
    assert json.loads(cursor.hook_output(_result("turn_end"), "cursor")) == {"continue": True}
    assert cursor.hook_output(_result(ignored=True, recall_context="<r>"), "cursor") == ""
    assert cursor.hook_output(_result(recall_context="<r>"), "text") == "<r>"  # other modes: generic


def test_zcode_output() -> None:
    zcode = ZCodeIntegration()
    assert json.loads(zcode.hook_output(_result(recall_context="<r>"), "zcode")) == {"additionalContext": "<r>"}
    both = json.loads(zcode.hook_output(_result(local_time_context="<t>", recall_context="<r>"), "zcode"))
    assert both == {"additionalContext": "<t>\n\n<r>"}
    assert zcode.hook_output(_result(), "zcode") == "{}"
    assert zcode.hook_output(_result(ignored=True, recall_context="<r>"), "zcode") == ""


@pytest.mark.parametrize("cls", [TraeIntegration, TraeCNIntegration, KiroIntegration])
def test_text_output(cls: type) -> None:
    integration = cls()
    assert integration.mode == "text"
    assert integration.hook_output(_result("session_start", session_context="<s>"), "text") == "<s>"
    assert integration.hook_output(_result(recall_context="<r>"), "text") == "<r>"
    assert integration.hook_output(_result(), "text") == ""


def test_installed_commands_use_each_ides_mode(tmp_path: Path, isolated_home: Path) -> None:
    config = default_config(tmp_path / "paxm" / "config.yaml")
    assert all(c.endswith("--cursor") for c in CursorIntegration().wanted_commands(config).values())
    assert all(c.endswith("--zcode") for c in ZCodeIntegration().wanted_commands(config).values())
    trae = TraeIntegration().wanted_commands(config)
    assert list(trae) == ["SessionStart", "UserPromptSubmit", "Stop"]
    assert not any(c.endswith(("--json", "--cursor", "--zcode")) for c in trae.values())
    # the Cursor agent has no passive recall, but its prompt is still written
    assert "beforeSubmitPrompt" in CursorIntegration().wanted_commands(config)
    config.agents["cursor"].hooks["user_input"].write.enabled = False
    config.agents["cursor"].hooks["turn_end"].write.enabled = False
    assert list(CursorIntegration().wanted_commands(config)) == ["sessionStart"]  # session start always


def test_a_custom_capture_queue_reaches_the_command(tmp_path: Path) -> None:
    config = default_config(tmp_path / "paxm" / "config.yaml")
    config.capture_queue.path = str(tmp_path / "q.sqlite")
    command = ZCodeIntegration().wanted_commands(config)["Stop"]
    assert f"--queue {tmp_path / 'q.sqlite'}" in command


def test_doctor_findings(tmp_path: Path, isolated_home: Path) -> None:
    config = default_config(tmp_path / "paxm" / "config.yaml")
    config.agents["cursor"].enabled = True
    ctx = InstallContext(config=config)
    cursor = CursorIntegration()
    missing = cursor.check(ctx)
    assert [f.level for f in missing] == ["warn", "warn"] and "--agent cursor" in missing[0].fix
    cursor.install(ctx)
    assert [f.level for f in cursor.check(ctx)] == ["ok"]
    hooks = json.loads(cursor.hooks_path().read_text())
    del hooks["hooks"]["afterAgentResponse"]
    cursor.hooks_path().write_text(json.dumps(hooks))
    assert [(f.level, "out of date" in f.message) for f in cursor.check(ctx)] == [("warn", True)]
    cursor.hooks_path().write_text("{broken")
    (finding,) = cursor.check(ctx)
    assert finding.level == "error" and "not valid JSON" in finding.message
    mcp = json.loads(cursor.mcp_path().read_text())
    mcp["mcpServers"]["paxm"]["command"] = str(tmp_path / "gone" / "paxm")
    cursor.mcp_path().write_text(json.dumps(mcp))
    cursor.hooks_path().unlink()
    cursor.install(ctx)  # rewrites the hooks and the stale MCP entry
    assert [f.level for f in cursor.check(ctx)] == ["ok"]


def test_no_paxm_executable_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("paxm_integration_ide.mcp.paxm_executable", lambda: "")
    config = default_config(tmp_path / "paxm" / "config.yaml")
    config.agents["kiro"].enabled = True
    with pytest.raises(IntegrationError, match="no `paxm` executable"):
        KiroIntegration().install(InstallContext(config=config))
    assert not KiroIntegration().agent_path().exists()  # refused before the first write


def test_files_are_private_whatever_the_umask(tmp_path: Path, isolated_home: Path) -> None:
    config = default_config(tmp_path / "paxm" / "config.yaml")
    config.agents["trae"].enabled = True
    old = os.umask(0)
    try:
        TraeIntegration().install(InstallContext(config=config))
    finally:
        os.umask(old)
    for path in (TraeIntegration().hooks_path(), TraeIntegration().mcp_path()):
        assert path.stat().st_mode & 0o777 == 0o600
        assert path.parent.stat().st_mode & 0o777 == 0o700
    state = tmp_path / "paxm" / "integrations" / "ide" / "trae.json"
    assert state.stat().st_mode & 0o777 == 0o600 and state.parent.stat().st_mode & 0o777 == 0o700


def test_a_symlinked_file_is_updated_at_its_target(tmp_path: Path, isolated_home: Path) -> None:
    real = tmp_path / "dotfiles" / "cursor-hooks.json"
    real.parent.mkdir()
    real.write_text('{"version": 1, "hooks": {}}')
    link = CursorIntegration().hooks_path()
    link.parent.mkdir()
    link.symlink_to(real)
    config = default_config(tmp_path / "paxm" / "config.yaml")
    config.agents["cursor"].enabled = True
    CursorIntegration().install(InstallContext(config=config))
    assert link.is_symlink() and "sessionStart" in json.loads(real.read_text())["hooks"]


def test_uninstall_and_broken_files(tmp_path: Path, isolated_home: Path) -> None:
    """A file paxm never wrote to cannot fail an uninstall; one it wrote to, broken since, is reported."""
    config = default_config(tmp_path / "paxm" / "config.yaml")
    config.agents["cursor"].enabled = True
    ctx = InstallContext(config=config)
    cursor = CursorIntegration()
    cursor.hooks_path().parent.mkdir(parents=True)
    cursor.hooks_path().write_text("{not json")
    assert cursor.uninstall(ctx) == []  # never installed: nothing to do, nothing to complain about
    cursor.hooks_path().unlink()
    cursor.install(ctx)
    cursor.hooks_path().write_text("{not json")
    with pytest.raises(IntegrationError, match="paxm's entries are still in it"):
        cursor.uninstall(ctx)
    assert cursor.hooks_path().read_text() == "{not json"
    assert not cursor.mcp_path().exists()  # the other file was still cleaned up
