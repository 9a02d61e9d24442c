"""``paxm setup`` / ``paxm uninstall`` / ``paxm __hook`` for Claude Code through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

PAXM = str(Path(sys.executable).parent / "paxm")
REALISTIC = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "python3 ~/.claude/hooks/guard.py"}]}],
        "PostToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier -w", "timeout": 30}]}
        ],
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
}


def paxm(
    config: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PAXM, "--config", str(config), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def config(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "paxm" / "config.yaml"
    yield path
    # `paxm __hook` starts a detached daemon to deliver what it buffered: stop it
    paxm(path, "__hook-control", "--shutdown")


@pytest.fixture
def settings(isolated_home: Path) -> Path:
    path = isolated_home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(REALISTIC, indent=4))
    return path


def _yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


def test_setup_then_uninstall_leaves_settings_semantically_unchanged(config: Path, settings: Path) -> None:
    done = paxm(config, "setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    assert done.returncode == 0, done.stderr
    assert "Claude Code: integration installed (owner paxm)" in done.stdout
    assert f"installed paxm hooks in {settings}" in done.stdout
    hooks = json.loads(settings.read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop"}
    assert _yaml(config)["agents"]["claude"]["enabled"] is True
    providers_before = _yaml(config)["providers"]
    paxm(config, "remember", "--text", "the build uses uv workspaces")

    done = paxm(config, "uninstall", "--agent", "claude-code", "--yes")
    assert done.returncode == 0, done.stderr
    assert "uninstalled Claude Code passive integration" in done.stdout
    assert json.loads(settings.read_text()) == REALISTIC
    after = _yaml(config)
    assert after["agents"]["claude"]["enabled"] is False
    assert after["agents"]["claude"]["hooks"]["user_input"]["recall"]["enabled"] is True  # hook config kept
    assert after["providers"] == providers_before
    recalled = paxm(config, "recall", "--query", "uv workspaces", "--json")
    assert "the build uses uv workspaces" in recalled.stdout  # memory data untouched

    again = paxm(config, "uninstall", "--agent", "claude", "--yes")  # idempotent
    assert again.returncode == 0, again.stderr
    assert json.loads(settings.read_text()) == REALISTIC
    assert settings.with_name("settings.json.paxm.bak").exists()


@pytest.mark.parametrize("case", ["other-hooks", "odd-formatting", "other-config"])
def test_setup_uninstall_round_trip_on_golden_files(case: str, config: Path, isolated_home: Path) -> None:
    settings = isolated_home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    before = (Path(__file__).with_name("golden") / case / "before.json").read_text().replace("{CONFIG}", str(config))
    settings.write_text(before)
    assert paxm(config, "setup", "--yes", "--agent", "claude", "--provider", "sqlite").returncode == 0
    assert json.loads(settings.read_text()) != json.loads(before)
    assert paxm(config, "uninstall", "--agent", "claude", "--yes").returncode == 0
    assert json.loads(settings.read_text()) == json.loads(before)
    assert settings.with_name("settings.json.paxm.bak").read_text() == before


def test_full_uninstall_removes_shared_hook_state_but_keeps_the_queue(config: Path, settings: Path) -> None:
    assert paxm(config, "setup", "--yes", "--agent", "claude", "--provider", "sqlite").returncode == 0
    payload = json.dumps(
        {"session_id": "s1", "cwd": "/w", "prompt": "hello there", "hook_event_name": "UserPromptSubmit"}
    )
    assert paxm(config, "__hook", "--target", "claude", "--event", "UserPromptSubmit", stdin=payload).returncode == 0
    hooks_dir = config.parent / "hooks"
    (hooks_dir / "session_state.json").write_text("{}")
    done = paxm(config, "uninstall", "--yes")
    assert done.returncode == 0, done.stderr
    assert json.loads(settings.read_text()) == REALISTIC
    assert not (hooks_dir / "session_state.json").exists()
    assert (hooks_dir / "capture.sqlite").exists()
    assert all(agent["enabled"] is False for agent in _yaml(config)["agents"].values())


def test_uninstall_errors(config: Path, settings: Path) -> None:
    done = paxm(config, "uninstall", "--agent", "vim", "--yes")
    assert done.returncode == 1 and "Error: unsupported agent 'vim'" in done.stderr
    done = paxm(config, "uninstall", "--agent", "claude")  # no terminal, no --yes
    assert done.returncode == 1 and "needs --yes" in done.stderr
    config.parent.mkdir(parents=True)
    config.write_text("providers: [oops\n")
    # a config that cannot be read never blocks uninstall: it works from the config's path
    done = paxm(config, "uninstall", "--agent", "claude", "--yes")
    assert done.returncode == 0 and done.stderr.startswith("warning: ") and "Traceback" not in done.stderr
    assert "cannot be read" in done.stderr and "nothing to remove" in done.stdout
    assert json.loads(settings.read_text()) == REALISTIC  # the user's own hooks stay
    assert config.read_text() == "providers: [oops\n"


def test_uninstall_without_the_integration_plugin_only_disables(config: Path, settings: Path) -> None:
    assert paxm(config, "setup", "--yes", "--agent", "claude", "--provider", "sqlite").returncode == 0
    installed = settings.read_text()
    done = paxm(config, "uninstall", "--agent", "claude", "--yes", env={"PAXM_LOAD_PLUGINS": "sqlite"})
    assert done.returncode == 0, done.stderr
    assert "no integration plugin is installed for it" in done.stdout
    assert settings.read_text() == installed
    assert _yaml(config)["agents"]["claude"]["enabled"] is False


def test_setup_refuses_invalid_settings_json(config: Path, settings: Path) -> None:
    settings.write_text('{"model": "opus",')
    done = paxm(config, "setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    assert done.returncode == 1
    assert "is not valid JSON" in done.stderr and "paxm changed nothing" in done.stderr
    assert settings.read_text() == '{"model": "opus",'
    assert not config.exists()  # preflight runs before the config is saved


def test_plugin_ownership_removes_settings_hooks(config: Path, settings: Path) -> None:
    assert paxm(config, "setup", "--yes", "--agent", "claude", "--provider", "sqlite").returncode == 0
    done = paxm(config, "setup", "--yes", "--force", "--agent", "claude", "--integration", "claude-plugin")
    assert done.returncode == 0, done.stderr
    assert "owner claude-plugin" in done.stdout
    assert json.loads(settings.read_text()) == REALISTIC  # nothing can fire twice
    assert _yaml(config)["agents"]["claude"]["integration"]["owner"] == "claude-plugin"
    generated = config.parent / "integrations" / "claude-plugin"
    assert f"claude plugin marketplace add {generated}" in done.stdout
    launcher = (generated / "plugins" / "paxm-claude" / "hooks" / "paxm-hook.sh").read_text()
    assert f"PAXM_CONFIG_FILE={config}" in launcher

    done = paxm(config, "uninstall", "--agent", "claude", "--yes")
    assert done.returncode == 0, done.stderr
    assert not generated.exists()
    assert json.loads(settings.read_text()) == REALISTIC


def test_ownership_gate_for_the_plugin(config: Path, settings: Path) -> None:
    assert (
        paxm(
            config, "setup", "--yes", "--agent", "claude", "--provider", "sqlite", "--integration", "claude-plugin"
        ).returncode
        == 0
    )
    # a memory for every project: the hook below runs in another directory (/w) than this CLI call
    assert paxm(config, "remember", "--global", "--text", "the staging database listens on port 5433").returncode == 0
    payload = json.dumps({"session_id": "s2", "cwd": "/w", "prompt": "which port does the staging database use?"})
    args = ("__hook", "--target", "claude", "--event", "UserPromptSubmit")
    settings_call = paxm(config, *args, stdin=payload)
    assert settings_call.returncode == 0 and settings_call.stdout == ""  # not the owner: ignored
    plugin_call = paxm(config, *args, stdin=payload, env={"PAXM_INTEGRATION_OWNER": "claude-plugin"})
    assert plugin_call.returncode == 0
    assert plugin_call.stdout.startswith('<paxm-recall version="1" mode="passive">')
    assert "port 5433" in plugin_call.stdout


def test_hook_output_shapes_through_the_cli(config: Path, settings: Path) -> None:
    assert paxm(config, "setup", "--yes", "--agent", "claude", "--provider", "sqlite").returncode == 0
    start = paxm(
        config, "__hook", "--target", "claude", "--event", "SessionStart", stdin=json.dumps({"session_id": "s3"})
    )
    assert start.stdout.startswith('<paxm-session-identity version="1">\n{"user_id":')
    assert '"agent_id":"claude-' in start.stdout and '"session_id":"s3"' in start.stdout
    assert '<paxm-local-time version="1">' in start.stdout
    stop = paxm(
        config,
        "__hook",
        "--target",
        "claude",
        "--event",
        "Stop",
        stdin=json.dumps({"session_id": "s3", "last_assistant_message": "done", "stop_hook_active": True}),
    )
    assert (stop.returncode, stop.stdout) == (0, "")  # never a block decision
    assert paxm(config, "queue", "flush", "--timeout", "20s").returncode == 0
    recalled = paxm(config, "recall", "--query", "done", "--json")
    assert "Claude Code assistant response" in recalled.stdout
