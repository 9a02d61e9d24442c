"""Through the real CLI: ``paxm setup --yes --agent X`` writes each IDE's files, doctor reads them,
``paxm uninstall --agent X`` takes them out, preflight refuses files it cannot merge into (changing
nothing), and the installed hook commands answer in the IDE's format."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest import paxm_cli
from paxm_core.integration import client_path

#: agent -> the files setup writes (relative to HOME)
FILES = {
    "cursor": [".cursor/hooks.json", ".cursor/mcp.json"],
    "trae": [".trae/hooks.json", ".config/Trae/User/mcp.json"],
    "trae-cn": [".trae-cn/hooks.json", ".config/Trae CN/User/mcp.json"],
    "kiro": [".kiro/agents/paxm.json", ".kiro/settings/mcp.json"],
    "zcode": [".zcode/cli/config.json"],
}


@pytest.fixture
def stop_daemon(tmp_path: Path) -> Iterator[None]:
    """Stop the hook daemon a hook command started, so no test leaves a process behind."""
    yield
    if (tmp_path / "paxm" / "config.yaml").exists():
        paxm_cli(tmp_path, "__hook-control", "--shutdown")


@pytest.mark.parametrize("agent", sorted(FILES))
def test_setup_doctor_uninstall(agent: str, tmp_path: Path, isolated_home: Path) -> None:
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", agent, "--provider", "sqlite")
    assert done.returncode == 0, done.stderr
    for rel in FILES[agent]:
        assert (isolated_home / rel).is_file(), rel
        assert "wrote" in done.stdout and str(isolated_home / rel) in done.stdout
    assert "was not found on this machine" in done.stdout  # no IDE here: said plainly, not refused
    text = "".join((isolated_home / rel).read_text() for rel in FILES[agent])
    assert f"--target {agent} --event session_start" in text and str(client_path()) in text
    assert '"--agent",\n' in text and f'"{agent}"' in text  # the MCP server serves this agent

    doctor = paxm_cli(tmp_path, "config", "doctor", "--json")
    findings = [f for f in json.loads(doctor.stdout) if f.get("check") and agent in json.dumps(f)]
    assert findings and all(f["level"] == "ok" for f in findings), findings

    # a hook pointing at a gone interpreter: doctor says which file and how to fix it
    first = isolated_home / FILES[agent][0]
    first.write_text(first.read_text().replace(sys.executable, "/gone/bin/python"))
    doctor = paxm_cli(tmp_path, "config", "doctor", "--json")
    errors = [f for f in json.loads(doctor.stdout) if f.get("level") == "error"]
    assert doctor.returncode == 1 and any("/gone/bin/python" in f["message"] for f in errors), doctor.stdout
    assert all("setup --yes" in f["fix"] and f"--agent {agent}" in f["fix"] for f in errors)

    again = paxm_cli(tmp_path, "setup", "--yes", "--force", "--agent", agent, "--provider", "sqlite")
    assert again.returncode == 0, again.stderr  # setup repairs it
    assert "/gone/bin/python" not in first.read_text()

    done = paxm_cli(tmp_path, "uninstall", "--agent", agent, "--yes")
    assert done.returncode == 0, done.stderr
    for rel in FILES[agent]:
        assert not (isolated_home / rel).exists(), f"uninstall left {rel}"
    # The directories paxm made for them went too.  paxm's own entry-point index cache
    # (``~/.cache/paxm``, kept for every command's start-up) is not this integration's.
    cache = isolated_home / ".cache"
    left = [p for p in isolated_home.rglob("*") if p != cache and not p.is_relative_to(cache / "paxm")]
    assert left == []
    assert all(p.name.startswith("plugins-") for p in (cache / "paxm").glob("*")), list((cache / "paxm").glob("*"))


@pytest.mark.parametrize(
    ("agent", "rel", "content", "message"),
    [
        ("cursor", ".cursor/hooks.json", '{"hooks": {', "is not valid JSON (line 1"),
        ("cursor", ".cursor/hooks.json", '{"hooks": {"stop": {"command": "x"}}}', "hooks.stop must be a JSON array"),
        ("cursor", ".cursor/mcp.json", '{"mcpServers": []}', '"mcpServers" must be a JSON object'),
        ("cursor", ".cursor/mcp.json", '{"mcpServers": {"paxm": {"url": "https://x.test"}}}', 'named "paxm" that does'),
        ("trae", ".trae/hooks.json", "[]", "must hold a JSON object"),
        ("kiro", ".kiro/agents/paxm.json", '{"name": "paxm", "description": "my own agent"}', "is not paxm's"),
        ("zcode", ".zcode/cli/config.json", '{"hooks": {"enabled": false}}', "paxm never turns them on"),
        ("zcode", ".zcode/cli/config.json", '{"mcp": {"servers": 3}}', '"mcp.servers" must be a JSON object'),
    ],
)  # fmt: skip
def test_preflight_refuses_and_changes_nothing(
    agent: str, rel: str, content: str, message: str, tmp_path: Path, isolated_home: Path
) -> None:
    path = isolated_home / rel
    path.parent.mkdir(parents=True)
    path.write_text(content)
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", agent, "--provider", "sqlite")
    assert done.returncode == 1
    assert message in done.stderr and str(path) in done.stderr, done.stderr
    assert path.read_text() == content
    assert not (tmp_path / "paxm" / "config.yaml").exists()  # setup saved nothing either
    written = sorted(str(p.relative_to(isolated_home)) for p in isolated_home.rglob("*") if p.is_file())
    assert written == [rel]


def _installed_command(home: Path, agent: str, native: str) -> str:
    data: Any = json.loads((home / FILES[agent][0]).read_text())
    events = data["hooks"]["events"] if agent == "zcode" else data["hooks"]
    entry = events[native][-1]
    return str(entry["hooks"][0]["command"] if "hooks" in entry else entry["command"])


def _run(command: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(command, shell=True, input=json.dumps(payload).encode(), capture_output=True, timeout=60)


def _warm(command: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    """Run a context hook until the hook daemon it starts answers (a cold start on a loaded
    machine can outlast the client's wait, and the hook then rightly prints nothing)."""
    deadline = time.monotonic() + 30
    while True:
        done = _run(command, payload)
        if done.stdout or time.monotonic() > deadline:
            return done
        time.sleep(0.5)


def test_cursor_hooks_answer_in_cursors_format(tmp_path: Path, isolated_home: Path, stop_daemon: None) -> None:
    assert paxm_cli(tmp_path, "setup", "--yes", "--agent", "cursor", "--provider", "sqlite").returncode == 0
    base = {"conversation_id": "conv-7", "workspace_roots": [str(tmp_path)]}
    start = _warm(
        _installed_command(isolated_home, "cursor", "sessionStart"), {**base, "hook_event_name": "sessionStart"}
    )
    assert start.returncode == 0, start.stderr
    out = json.loads(start.stdout)
    assert out["continue"] is True and '<paxm-session-identity version="1">' in out["additional_context"]
    assert '"session_id":"conv-7"' in out["additional_context"].replace(" ", "")
    prompt = _run(
        _installed_command(isolated_home, "cursor", "beforeSubmitPrompt"),
        {**base, "hook_event_name": "beforeSubmitPrompt", "prompt": "hello"},
    )
    assert prompt.returncode == 0 and json.loads(prompt.stdout) == {"continue": True}


def test_zcode_and_kiro_hooks_answer_in_their_formats(tmp_path: Path, isolated_home: Path, stop_daemon: None) -> None:
    assert paxm_cli(tmp_path, "setup", "--yes", "--agent", "zcode", "--provider", "sqlite").returncode == 0
    start = _warm(
        _installed_command(isolated_home, "zcode", "SessionStart"), {"session_id": "z-1", "cwd": str(tmp_path)}
    )
    assert start.returncode == 0, start.stderr
    assert '<paxm-session-identity version="1">' in json.loads(start.stdout)["additionalContext"]
    end = _run(
        _installed_command(isolated_home, "zcode", "Stop"), {"session_id": "z-1", "last_assistant_message": "ok"}
    )
    assert end.returncode == 0 and json.loads(end.stdout) == {}

    assert paxm_cli(tmp_path, "setup", "--yes", "--force", "--agent", "kiro", "--provider", "sqlite").returncode == 0
    agent = json.loads((isolated_home / FILES["kiro"][0]).read_text())
    spawn = _warm(agent["hooks"]["agentSpawn"][0]["command"], {"hook_event_name": "agentSpawn", "cwd": str(tmp_path)})
    assert spawn.returncode == 0, spawn.stderr
    assert spawn.stdout.decode().startswith('<paxm-session-identity version="1">')  # plain text for Kiro


def test_hook_commands_fail_open_when_paxm_is_gone(tmp_path: Path, isolated_home: Path) -> None:
    assert paxm_cli(tmp_path, "setup", "--yes", "--agent", "trae", "--provider", "sqlite").returncode == 0
    command = _installed_command(isolated_home, "trae", "UserPromptSubmit")
    gone = command.replace(shlex.quote(sys.executable), shlex.quote(str(tmp_path / "no-python")))
    gone = gone.replace(sys.executable, str(tmp_path / "no-python"))
    assert gone != command
    done = _run(gone, {"prompt": "hi"})
    assert (done.returncode, done.stdout) == (0, b"")
