"""The ``opencode`` integration object: config dir, install/uninstall exactness, doctor, decode, output."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest import enabled_config, paxm_cli
from paxm_contracttest.generated_file_contract import (
    GeneratedFileContract,
    assert_guarded_client_argv,
    install_with_umask_0,
)
from paxm_core.integration import (
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    InstallContext,
)
from paxm_integration_opencode import OpenCodeIntegration
from paxm_integration_opencode.plugin import MARKER, plugin_file

UPSTREAM_TS = (
    'import type { Plugin } from "@opencode-ai/plugin";\n'
    'const paxmUserInputHookCommand = "/x";\n// paxm.opencode.user_input.v1\n'
)


def test_config_dir_resolution(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    integration = OpenCodeIntegration()
    assert integration.config_dir() == isolated_home / ".config" / "opencode"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert integration.config_dir() == isolated_home / ".config" / "opencode"
    monkeypatch.setenv("XDG_CONFIG_HOME", "/xdg")
    assert integration.config_dir() == Path("/xdg/opencode")
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", "/oc")
    assert integration.config_dir() == Path("/oc")
    monkeypatch.setenv("PAXM_OPENCODE_CONFIG_DIR", "~/mine")
    assert integration.config_dir() == isolated_home / "mine"
    assert integration.plugin_path() == isolated_home / "mine" / "plugins" / "paxm.js"


def test_a_variant_is_a_small_subclass(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    class Variant(OpenCodeIntegration):
        name = "variant"
        display_name = "Variant"
        config_dir_env = ("PAXM_VARIANT_CONFIG_DIR",)
        xdg_dir_name = "variant"
        executable = "variant"

    variant = Variant()
    assert variant.config_dir() == isolated_home / ".config" / "variant"
    monkeypatch.setenv("PAXM_VARIANT_CONFIG_DIR", "/v")
    assert variant.plugin_path() == Path("/v/plugins/paxm.js")


def test_install_writes_a_private_dependency_free_plugin_and_uninstall_removes_exactly_it(
    tmp_path: Path, isolated_home: Path
) -> None:
    config = enabled_config(tmp_path, "opencode")
    integration = OpenCodeIntegration()
    oc_dir = integration.config_dir()
    (oc_dir / "plugins").mkdir(parents=True)
    (oc_dir / "opencode.json").write_text('{"model": "x"}')
    (oc_dir / "plugins" / "mine.js").write_text("export const Mine = async () => ({})\n")
    before = {p: p.read_bytes() for p in oc_dir.rglob("*") if p.is_file()}
    lines = install_with_umask_0(integration, config)
    path = integration.plugin_path()
    assert lines[0] == f"installed the paxm OpenCode plugin at {path}"
    assert "npm install @opencode-ai/plugin@$(opencode --version)" in lines[1]  # offline advice
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    source = path.read_text()
    assert MARKER in source and '@opencode-ai/plugin"' not in source and 'from "' not in source
    settings: dict[str, Any] | None = plugin_file().embedded_settings(source)
    assert settings is not None
    # opencode's defaults: recall on prompts, write on turn end; session_start bootstraps
    assert sorted(settings["commands"]) == ["session_start", "turn_end", "user_input"]
    assert_guarded_client_argv(settings["commands"]["user_input"], "opencode", "chat.message")
    assert not (oc_dir / "package.json").exists()  # nothing added to OpenCode's dependency install

    assert [f.level for f in integration.check(InstallContext(config=config))] == ["ok", "warn"]
    dep = oc_dir / "node_modules" / "@opencode-ai" / "plugin"
    dep.mkdir(parents=True)
    (dep / "package.json").write_text("{}")  # what OpenCode's own install leaves
    again: list[str] = []
    integration.install(InstallContext(config=config, echo=again.append))
    assert again == [f"the paxm OpenCode plugin at {path} is up to date"]
    assert [f.level for f in integration.check(InstallContext(config=config))] == ["ok"]
    before[dep / "package.json"] = b"{}"

    removed = integration.uninstall(InstallContext(config=config))
    assert removed == [f"removed the paxm OpenCode plugin {path}"]
    assert {p: p.read_bytes() for p in oc_dir.rglob("*") if p.is_file()} == before
    assert integration.uninstall(InstallContext(config=config)) == []


def test_tool_use_is_forwarded_only_when_enabled(tmp_path: Path) -> None:
    config = enabled_config(tmp_path, "opencode")
    integration = OpenCodeIntegration()
    assert "tool_use" not in integration.commands(config)
    config.agents["opencode"].hooks["tool_use"] = type(config.agents["opencode"].hooks["turn_end"])(
        write=config.agents["opencode"].hooks["turn_end"].write
    )
    assert integration.commands(config)["tool_use"][-1] == "tool.execute.after"


def test_upstream_ts_plugin_is_replaced_and_foreign_files_are_never_touched(tmp_path: Path) -> None:
    config = enabled_config(tmp_path, "opencode")
    integration = OpenCodeIntegration()
    plugins = integration.plugin_path().parent
    plugins.mkdir(parents=True)
    (plugins / "paxm.ts").write_text(UPSTREAM_TS)
    lines = integration.install(InstallContext(config=config))
    assert not (plugins / "paxm.ts").exists()
    assert lines[0] == f"removed the old paxm plugin {plugins / 'paxm.ts'}"
    # a user's own file named paxm.js is not paxm's: uninstall leaves it, doctor says so
    integration.plugin_path().write_text("export const Mine = async () => ({})\n")
    assert integration.uninstall(InstallContext(config=config)) == []
    assert integration.plugin_path().exists()
    (finding,) = integration.check(InstallContext(config=config))
    assert finding.level == "error" and "not a plugin paxm generated" in finding.message


def test_decode_plugin_payloads() -> None:
    integration = OpenCodeIntegration()
    prompt = integration.decode(
        "chat.message",
        json.dumps({"session_id": "ses_1", "prompt": "hi there", "cwd": "/w/sub", "workspace": "/w"}).encode(),
    )
    assert (prompt.target, prompt.event, prompt.native_event) == ("opencode", EVENT_USER_INPUT, "chat.message")
    assert prompt.prompt == "hi there" and prompt.workspace == "/w" and prompt.metadata["session_id"] == "ses_1"
    end = integration.decode(
        "session.idle",
        json.dumps(
            {
                "session_id": "ses_1",
                "prompt": "hi",
                "last_assistant_message": "hello",
                "messages": [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello"}],
            }
        ).encode(),
    )
    assert end.event == EVENT_TURN_END and end.assistant == "hello"
    assert [(m.role, m.text) for m in end.messages] == [("user", "hi"), ("assistant", "hello")]
    tool = integration.decode(
        "tool.execute.after",
        json.dumps({"tool_name": "bash", "tool_input": {"command": "ls"}, "tool_response": "a\n"}).encode(),
    )
    assert tool.event == EVENT_TOOL_USE
    assert [(m.role, m.text) for m in tool.messages] == [("tool_call", 'bash {"command":"ls"}'), ("tool_result", "a")]
    assert integration.decode("chat.message", b"\xff not json").prompt == ""


def test_setup_and_uninstall_cli(tmp_path: Path, isolated_home: Path) -> None:
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", "opencode", "--provider", "sqlite")
    assert done.returncode == 0, done.stderr
    path = isolated_home / ".config" / "opencode" / "plugins" / "paxm.js"
    assert path.exists()
    assert f"installed the paxm OpenCode plugin at {path}" in done.stdout + done.stderr
    done = paxm_cli(tmp_path, "uninstall", "--agent", "opencode", "--yes")
    assert done.returncode == 0, done.stderr
    assert not path.exists()
    assert path.parent.is_dir()  # the directory may hold the user's own plugins: left alone


class TestOpenCodeGeneratedFile(GeneratedFileContract):
    """Private directories, doctor findings (missing file, missing client, stale) and prompt-only output."""

    @pytest.fixture
    def paxm_integration(self) -> OpenCodeIntegration:
        return OpenCodeIntegration()
