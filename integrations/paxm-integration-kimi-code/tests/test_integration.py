"""The ``kimi-code`` integration: config.toml goldens through the CLI, the contract, decode, output."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import stat
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from paxm_contracttest import PAXM, DecodeFixture, IntegrationContract, NativeConfig, assert_detects, paxm_cli
from paxm_core.envelope import wrap_recall_context
from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    HookResult,
    Integration,
)
from paxm_core.plugins import get_plugin_manager
from paxm_core.processes import pid_alive
from paxm_integration_kimi_code import KimiCodeIntegration
from paxm_integration_kimi_code.integration import UPSTREAM_BEGIN, UPSTREAM_END

FIXTURES = Path(__file__).parent / "fixtures" / "kimi-code-2.1.0"
#: a realistic ~/.kimi-code/config.toml: comments, a provider, the user's own hook, a model after it
USER_CONFIG = """\
# Kimi Code settings (hand-edited)
default_model = "kimi-k2"  # the fast one
telemetry = false

[providers.moonshot]
type = "kimi"
base_url = "https://api.moonshot.ai/v1"
api_key = "sk-not-a-real-key"

# block rm -rf
[[hooks]]
event = "PreToolUse"
matcher = "Bash"
command = "~/bin/guard-bash"
timeout = 5

[models.kimi-k2]
provider = "moonshot"
model = "kimi-k2-turbo"
max_context_size = 262144
"""


def _stop_hook_daemon(config: Path) -> None:
    """Shut down the hook daemon serving ``config`` (SIGKILL if it lingers); assert none survives."""
    lock = config.parent / "hooks" / "paxm-hook.lock"
    if not lock.exists():
        return
    pid = int(lock.read_text().strip() or 0)
    paxm_cli(config.parent.parent, "__hook-control", "--shutdown")
    deadline = time.monotonic() + 10
    while pid and pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid and pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"the hook daemon {pid} for {config} ignored the shutdown")


def _commands(text: str) -> list[str]:
    hooks = tomllib.loads(text).get("hooks", [])
    return [h["command"] for h in hooks if "client.py" in h.get("command", "")]


class TestKimiCodeContract(IntegrationContract):
    output_modes = ("text",)

    @pytest.fixture
    def paxm_integration(self) -> Integration:
        return KimiCodeIntegration()

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        return [
            DecodeFixture("SessionStart", FIXTURES / "SessionStart.json", EVENT_SESSION_START),
            DecodeFixture(
                "UserPromptSubmit",
                FIXTURES / "UserPromptSubmit.json",
                EVENT_USER_INPUT,
                {"prompt": "RUN_TOOL: please note the decision", "workspace": "/tmp/kc/probe/run1/work"},
            ),
            DecodeFixture("PostToolUse", FIXTURES / "PostToolUse.json", EVENT_TOOL_USE),
            DecodeFixture(
                "Stop",
                FIXTURES / "Stop.json",
                EVENT_TURN_END,
                {"metadata.session_id": "session_adaaf84c-c0ed-47fd-b50a-a9f5a8c62505"},
            ),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NativeConfig:
        monkeypatch.setenv("KIMI_CODE_HOME", str(tmp_path / "kimi"))
        return NativeConfig(
            path=tmp_path / "kimi" / "config.toml", content=USER_CONFIG, parse=tomllib.loads, commands=_commands
        )


def test_registered_under_its_own_name() -> None:
    found = get_plugin_manager().integration("kimi-code")
    assert isinstance(found, KimiCodeIntegration) and isinstance(found, Integration)
    assert "kimi" in found.aliases  # upstream's agent name keeps resolving once the IDE entry is gone


def test_setup_merges_into_the_users_toml_and_uninstall_restores_it_byte_for_byte(
    tmp_path: Path, isolated_home: Path
) -> None:
    config = isolated_home / ".kimi-code" / "config.toml"
    config.parent.mkdir()
    config.write_text(USER_CONFIG)
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", "kimi-code", "--provider", "sqlite")
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert (config.parent / "config.toml.paxm.bak").read_text() == USER_CONFIG
    assert text.startswith('# Kimi Code settings (hand-edited)\ndefault_model = "kimi-k2"  # the fast one\n')
    data = tomllib.loads(text)
    assert data["models"]["kimi-k2"]["max_context_size"] == 262144
    assert data["hooks"][0] == {"event": "PreToolUse", "matcher": "Bash", "command": "~/bin/guard-bash", "timeout": 5}
    ours = data["hooks"][1:]
    assert [h["event"] for h in ours] == ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"]
    for hook in ours:  # Kimi rejects the whole file for any other key
        assert set(hook) == {"event", "command", "timeout"} and hook["timeout"] == 10
        assert f"--target kimi-code --event {hook['event']}" in hook["command"]

    again = paxm_cli(tmp_path, "setup", "--yes", "--agent", "kimi-code", "--provider", "sqlite", "--force")
    assert again.returncode == 0, again.stderr
    assert config.read_text() == text

    doctor = paxm_cli(tmp_path, "config", "doctor", "--json")
    assert "paxm hooks installed in" in doctor.stdout, doctor.stdout[-3000:]

    done = paxm_cli(tmp_path, "uninstall", "--agent", "kimi-code", "--yes")
    assert done.returncode == 0, done.stderr
    assert config.read_text() == USER_CONFIG


def test_upstreams_marker_block_is_replaced_and_a_broken_file_stops_setup(tmp_path: Path, isolated_home: Path) -> None:
    config = isolated_home / ".kimi-code" / "config.toml"
    config.parent.mkdir()
    block = (
        f'{UPSTREAM_BEGIN}\n[[hooks]]\nevent = "Stop"\ncommand = "paxm __hook --kimi"\ntimeout = 60\n{UPSTREAM_END}\n'
    )
    config.write_text(USER_CONFIG + block)
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", "kimi-code", "--provider", "sqlite")
    assert done.returncode == 0, done.stderr
    assert UPSTREAM_BEGIN not in config.read_text() and "__hook --kimi" not in config.read_text()

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.toml").write_text("[[hooks]\nevent = ")
    env = {**os.environ, "KIMI_CODE_HOME": str(broken)}
    done = subprocess.run(
        [
            PAXM,
            "--config",
            str(tmp_path / "p2" / "config.yaml"),
            "setup",
            "--yes",
            "--agent",
            "kimi-code",
            "--provider",
            "sqlite",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0 and "not valid TOML" in done.stderr
    assert (broken / "config.toml").read_text() == "[[hooks]\nevent = "
    assert not (tmp_path / "p2" / "config.yaml").exists()


def test_output_is_plain_text_for_prompts_only_with_the_session_blocks_on_the_first() -> None:
    kimi = KimiCodeIntegration()
    context = wrap_recall_context("passive", "Release branches are release/<v>.")
    first = HookResult(target="kimi-code", event=EVENT_USER_INPUT, recall_context=context, bootstrap_context="<id/>")
    assert kimi.hook_output(first, "text") == "<id/>\n\n" + context
    start = HookResult(target="kimi-code", event=EVENT_SESSION_START, session_context="<id/>")
    assert kimi.hook_output(start, "text") == ""  # Kimi ignores SessionStart output
    assert kimi.hook_output(HookResult(target="kimi-code", event=EVENT_TURN_END, recall_context="x"), "") == ""


def test_stop_reads_the_reply_from_the_sessions_wire_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_CODE_HOME", str(tmp_path / "kimi"))
    session = "session_adaaf84c-c0ed-47fd-b50a-a9f5a8c62505"
    main = tmp_path / "kimi" / "sessions" / "wd_work_b17e113118e8" / session / "agents" / "main"
    kimi = KimiCodeIntegration()
    stop = (FIXTURES / "Stop.json").read_bytes()
    assert kimi.decode("Stop", stop).assistant == ""  # no wire file yet: nothing, no error
    main.mkdir(parents=True)
    shutil.copy(FIXTURES / "wire.jsonl", main / "wire.jsonl")
    event = kimi.decode("Stop", stop)
    assert event.event == EVENT_TURN_END
    assert event.assistant == "Noted, I will remember that. [marker-seen]"
    assert event.prompt == "RUN_TOOL: please note the decision"
    assert [m.role for m in event.messages] == ["user", "assistant"]
    assert event.metadata["transcript_path"] == str(main / "wire.jsonl")


def test_tool_use_decodes_kimis_tool_output() -> None:
    event = KimiCodeIntegration().decode("PostToolUse", (FIXTURES / "PostToolUse.json").read_bytes())
    assert [(m.role, m.text.strip()) for m in event.messages][-1] == ("tool_result", "TOOL_RAN_OK")
    assert event.messages[0].text.startswith("Bash ")


def test_installed_command_is_silent_and_exits_0_with_paxm_gone(tmp_path: Path, isolated_home: Path) -> None:
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", "kimi-code", "--provider", "sqlite")
    assert done.returncode == 0, done.stderr
    config = isolated_home / ".kimi-code" / "config.toml"
    command = _commands(config.read_text())[1]
    shutil.move(str(tmp_path / "paxm"), str(tmp_path / "gone"))
    try:
        run = subprocess.run(shlex.split(command), input=b'{"prompt": "hi"}', capture_output=True, timeout=60)
        assert (run.returncode, run.stdout) == (0, b"")
    finally:
        # zero-setup defaults recreate the moved config dir and the hook starts a daemon there
        # (it would idle for 30 minutes after the test): stop it and check that it is gone
        _stop_hook_daemon(tmp_path / "paxm" / "config.yaml")


def test_detect_finds_kimi_on_path_else_its_home(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kimi = KimiCodeIntegration()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert_detects(kimi, isolated_home / ".kimi-code", "kimi", tmp_path)


def test_install_sets_the_mode_only_on_the_directory_it_made_never_through_a_link(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another process swaps the new ~/.kimi-code for a link to its own directory right after mkdir
    from paxm_core.config import save_config
    from paxm_core.config.codec import decode
    from paxm_core.config.defaults import default_config
    from paxm_core.config.model import AgentConfig
    from paxm_core.integration import InstallContext

    victim = tmp_path / "victim"
    victim.mkdir()
    victim.chmod(0o755)
    kimi_home = isolated_home / ".kimi-code"
    real_mkdir = os.mkdir

    def mkdir_and_plant(path: str | os.PathLike[str], mode: int = 0o777, **kw: object) -> None:
        real_mkdir(path, mode)
        if Path(path) == kimi_home:
            os.rmdir(path)
            os.symlink(victim, path)

    monkeypatch.setattr(os, "mkdir", mkdir_and_plant)
    config_path = tmp_path / "paxm" / "config.yaml"
    config = default_config(config_path)
    config.agents["kimi-code"] = decode(
        AgentConfig, dict(KimiCodeIntegration().default_agent_config()), "agents.kimi-code"
    )
    config.agents["kimi-code"].enabled = True
    save_config(config, config_path)
    config.path = config_path
    with pytest.raises(OSError):
        KimiCodeIntegration().install(InstallContext(config=config))
    assert stat.S_IMODE(victim.stat().st_mode) == 0o755 and list(victim.iterdir()) == []
