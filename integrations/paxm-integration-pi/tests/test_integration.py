"""The ``pi`` integration object: agent dir, install/uninstall exactness, doctor, decode, output."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from paxm_contracttest import enabled_config, paxm_cli
from paxm_contracttest.generated_file_contract import GeneratedFileContract
from paxm_core.api.errors import IntegrationError
from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    InstallContext,
)
from paxm_integration_pi import PiIntegration
from paxm_integration_pi.extension import MARKER, embedded_settings

#: the shape of the Go paxm's generated extension (only what recognising it needs)
UPSTREAM_TS = (
    'import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";\n'
    'const paxmUserInputHookCommand = "/x/hooks/pi-user_input";\n'
    'const payload = { schema_version: "paxm.pi.user_input.v1" };\n'
)


def test_agent_dir_resolution(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    integration = PiIntegration()
    assert integration.agent_dir() == isolated_home / ".pi" / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "/pi-agent")
    assert integration.agent_dir() == Path("/pi-agent")
    monkeypatch.setenv("PAXM_PI_AGENT_DIR", "~/mine")  # paxm's own override wins
    assert integration.agent_dir() == isolated_home / "mine"
    assert integration.extension_path() == isolated_home / "mine" / "extensions" / "paxm-hook" / "index.ts"
    monkeypatch.setenv("PAXM_PI_AGENT_DIR", "  ")  # blank means unset
    assert integration.agent_dir() == Path("/pi-agent")


def test_install_writes_a_private_extension_and_uninstall_removes_exactly_it(
    tmp_path: Path, isolated_home: Path
) -> None:
    config = enabled_config(tmp_path, "pi")
    integration = PiIntegration()
    agent = integration.agent_dir()
    (agent / "extensions" / "mine").mkdir(parents=True)
    (agent / "extensions" / "mine" / "index.ts").write_text("export default function () {}\n")
    (agent / "models.json").write_text('{"providers": {}}')
    before = {p: p.read_bytes() for p in agent.rglob("*") if p.is_file()}
    old = os.umask(0)
    try:
        lines: list[str] = []
        integration.install(InstallContext(config=config, echo=lines.append))
    finally:
        os.umask(old)
    path = integration.extension_path()
    assert lines == [f"installed the paxm Pi extension at {path}"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    source = path.read_text()
    assert MARKER in source and "pi-coding-agent" not in source.split(MARKER, 1)[1]
    settings = embedded_settings(source)
    assert settings is not None and settings["target"] == "pi" and settings["timeoutMs"] == 10_000
    # pi's defaults: recall on prompts, write on turn end; session_start always
    assert sorted(settings["commands"]) == ["session_start", "turn_end", "user_input"]
    argv = settings["commands"]["user_input"]
    # the fail-open guard, then `<python> -I -S <client.py>`
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3] == "paxm-hook"
    assert argv[5:7] == ["-I", "-S"] and Path(argv[4]).exists() and Path(argv[7]).exists()
    assert argv[argv.index("--target") + 1] == "pi" and argv[argv.index("--event") + 1] == "before_agent_start"
    assert settings["commands"]["turn_end"][-1] == "agent_end"
    assert "--json" not in argv  # plain-text output: the extension injects stdout as is

    assert [f.level for f in integration.check(InstallContext(config=config))] == ["ok"]
    again: list[str] = []
    integration.install(InstallContext(config=config, echo=again.append))
    assert again == [f"the paxm Pi extension at {path} is up to date"]

    removed = integration.uninstall(InstallContext(config=config))
    assert removed == [f"removed the paxm Pi extension {path}"]
    assert not path.parent.exists()
    assert {p: p.read_bytes() for p in agent.rglob("*") if p.is_file()} == before
    assert integration.uninstall(InstallContext(config=config)) == []


def test_recall_off_drops_the_prompt_hook(tmp_path: Path) -> None:
    config = enabled_config(tmp_path, "pi")
    config.agents["pi"].hooks["user_input"].recall.enabled = False
    assert sorted(PiIntegration().commands(config)) == ["session_start", "turn_end"]


def test_upstream_extension_is_replaced_in_place_and_foreign_files_are_never_touched(tmp_path: Path) -> None:
    config = enabled_config(tmp_path, "pi")
    integration = PiIntegration()
    path = integration.extension_path()
    path.parent.mkdir(parents=True)
    path.write_text(UPSTREAM_TS)
    (finding,) = integration.check(InstallContext(config=config))
    assert finding.level == "warn" and "old (Go) paxm" in finding.message
    lines = integration.install(InstallContext(config=config))
    assert lines == [f"replaced the old paxm Pi extension with the paxm Pi extension at {path}"]
    assert MARKER in path.read_text()

    # a user's own index.ts there is not paxm's: setup refuses, uninstall leaves it, doctor says so
    path.write_text("export default function (pi) {}\n")
    with pytest.raises(IntegrationError, match="not generated by paxm"):
        integration.install(InstallContext(config=config))
    assert integration.uninstall(InstallContext(config=config)) == []
    assert path.read_text() == "export default function (pi) {}\n"
    (finding,) = integration.check(InstallContext(config=config))
    assert finding.level == "error" and "not an extension paxm generated" in finding.message

    # a user's extra file in paxm-hook/ keeps the directory on uninstall
    path.unlink()
    integration.install(InstallContext(config=config))
    (path.parent / "notes.md").write_text("mine")
    integration.uninstall(InstallContext(config=config))
    assert not path.exists() and (path.parent / "notes.md").read_text() == "mine"


def test_decode_extension_payloads() -> None:
    integration = PiIntegration()
    prompt = integration.decode(
        "before_agent_start",
        json.dumps({"session_id": "01a2", "prompt": "hi there", "cwd": "/w", "workspace": "/w"}).encode(),
    )
    assert (prompt.target, prompt.event, prompt.native_event) == ("pi", EVENT_USER_INPUT, "before_agent_start")
    assert prompt.prompt == "hi there" and prompt.workspace == "/w" and prompt.metadata["session_id"] == "01a2"
    assert integration.decode("session_start", b"{}").event == EVENT_SESSION_START
    end = integration.decode(
        "agent_end",
        json.dumps(
            {
                "session_id": "01a2",
                "prompt": "hi",
                "last_assistant_message": "hello",
                "messages": [
                    {"role": "user", "text": "hi", "source": "before_agent_start"},
                    {"role": "tool_call", "text": 'bash {"command":"ls"}', "source": "tool_execution_end"},
                    {"role": "tool_result", "text": "a", "source": "tool_execution_end"},
                    {"role": "assistant", "text": "hello", "source": "message_end"},
                ],
            }
        ).encode(),
    )
    assert end.event == EVENT_TURN_END and end.assistant == "hello"
    assert [(m.role, m.text) for m in end.messages] == [
        ("user", "hi"),
        ("tool_call", 'bash {"command":"ls"}'),
        ("tool_result", "a"),
        ("assistant", "hello"),
    ]
    assert integration.decode("session_shutdown", b"{}").event == EVENT_TURN_END
    assert integration.decode("before_agent_start", b"\xff not json").prompt == ""


def test_setup_doctor_and_uninstall_cli(tmp_path: Path, isolated_home: Path) -> None:
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", "pi", "--provider", "sqlite")
    assert done.returncode == 0, done.stderr
    path = isolated_home / ".pi" / "agent" / "extensions" / "paxm-hook" / "index.ts"
    assert path.exists()
    assert f"installed the paxm Pi extension at {path}" in done.stdout + done.stderr
    done = paxm_cli(tmp_path, "uninstall", "--agent", "pi", "--yes")
    assert done.returncode == 0, done.stderr
    assert not path.exists() and not path.parent.exists()
    assert path.parent.parent.is_dir()  # extensions/ may hold the user's own extensions: left alone

    # a foreign index.ts where paxm's goes: setup stops with a clear error, writes nothing
    path.parent.mkdir()
    path.write_text("export default function (pi) {}\n")
    config = tmp_path / "paxm" / "config.yaml"
    before = config.read_bytes()
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", "pi", "--provider", "sqlite", "--force")
    assert done.returncode != 0
    assert "was not generated by paxm" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert path.read_text() == "export default function (pi) {}\n"
    assert config.read_bytes() == before


class TestPiGeneratedFile(GeneratedFileContract):
    """Private directories, doctor findings (missing file, missing client, stale) and prompt-only output."""

    @pytest.fixture
    def paxm_integration(self) -> PiIntegration:
        return PiIntegration()
