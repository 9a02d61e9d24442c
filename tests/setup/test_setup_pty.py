"""``paxm setup`` in a real pseudo-terminal: arrows, space, enter and a typed (masked) key.

Each test spawns the real CLI under a pty with ``pexpect``, answers questionary's prompts with
keystrokes and asserts what was (or was not) written: the config and Claude Code's settings.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from paxm_contracttest.servers import closing_fixture

pexpect = pytest.importorskip("pexpect")

sys.path.insert(0, str(Path(__file__).parents[2] / "providers" / "paxm-provider-zep" / "tests"))
from zep_fake import ZepFake  # noqa: E402

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"
DOWN = "\x1b[B"
ENTER = "\r"
SPACE = " "
TIMEOUT = 30


zep = closing_fixture("zep", ZepFake, "A fresh local Zep v4 server for setup to ensure a user in.")


@pytest.fixture
def claude_dir(isolated_home: Path) -> Path:
    """A Claude Code config dir, so the integration detects the harness."""
    path = isolated_home / ".claude"
    path.mkdir()
    return path


def spawn(config: Path, *args: str) -> pexpect.spawn:
    env = {**os.environ, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "200", "LINES": "50"}
    # the lists' keystrokes depend on which plugins are offered: pin them (sqlite, zep, Claude Code)
    env["PAXM_LOAD_PLUGINS"] = "sqlite,zep,claude_code"
    child = pexpect.spawn(
        sys.executable,
        ["-c", ENTRY, "--config", str(config), "setup", "--user-id", "alice", *args],
        env=env,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(50, 200),
    )
    child.logfile_read = io.StringIO()  # the whole screen output, for asserting what was (not) shown
    return child


def confirm(child: pexpect.spawn, answer: str, *summary: str) -> tuple[int, str]:
    """Wait for the setup summary and its ``summary`` lines (if any), answer "Apply this setup", finish."""
    if summary:
        child.expect("Setup summary")
        for line in summary:
            child.expect(line)
    child.expect("Apply this setup")
    child.send(answer)
    return finish(child)


def finish(child: pexpect.spawn) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    child.close()
    code = child.exitstatus if child.exitstatus is not None else -(child.signalstatus or 0)
    log = child.logfile_read
    assert isinstance(log, io.StringIO)
    return code, log.getvalue()


def test_sqlite_and_claude_code_with_arrow_keys(tmp_path: Path, claude_dir: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    child = spawn(config)
    child.expect("Memory providers to enable")
    child.expect("sqlite")
    child.send(ENTER)  # sqlite is pre-ticked
    child.expect("Agents to connect")
    child.expect(r"Claude Code \(detected\)")
    child.send(ENTER)  # the detected harness is pre-ticked
    code, rest = confirm(child, "y", "Agents: Claude Code")
    assert code == 0, rest
    data = yaml.safe_load(config.read_text())
    assert data["providers"]["sqlite"]["enabled"] is True
    assert data["agents"]["claude"]["enabled"] is True
    assert data["write_profiles"]["default"]["scope"] == {"type": "personal", "id": "alice"}
    settings = json.loads((claude_dir / "settings.json").read_text())
    commands = [h["command"] for groups in settings["hooks"].values() for g in groups for h in g["hooks"]]
    assert commands and all(str(config) in c for c in commands)
    assert set(settings["hooks"]) >= {"SessionStart", "UserPromptSubmit", "Stop"}


def _to_zep_and_tick(child: pexpect.spawn) -> None:
    child.expect("Memory providers to enable")
    child.expect("zep")
    child.send(DOWN)
    child.send(SPACE)
    child.send(ENTER)


def test_zep_with_a_masked_key_against_the_local_server(tmp_path: Path, claude_dir: Path, zep: ZepFake) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    key = zep.state.api_key
    child = spawn(config, "--base-url", zep.base_url)
    _to_zep_and_tick(child)
    child.expect("Zep API key")
    child.send(key)
    child.expect(r"\*{" + str(len(key)) + "}")  # the key is masked as it is typed
    child.send(ENTER)
    child.expect("Agents to connect")
    child.send(ENTER)
    code, rest = confirm(child, "y", r"zep \(zep\): api_key: \(set, hidden\)")
    assert code == 0, rest
    transcript = rest
    assert key not in transcript
    assert "ensured zep (zep) target: user alice (created)" in transcript.replace("\r", ""), transcript[-2000:]
    data = yaml.safe_load(config.read_text())
    assert data["providers"]["zep"]["enabled"] is True
    assert data["providers"]["zep"]["api_key"] == key
    assert data["providers"]["zep"]["user_id"] == "alice"
    routes = {r["name"]: r for r in data["recall_profiles"]["default"]["providers"]}
    assert routes["zep"]["required"] is True
    assert zep.state.requests("POST", "/users")
    assert (claude_dir / "settings.json").is_file()


def test_a_bad_key_saves_nothing(tmp_path: Path, claude_dir: Path, zep: ZepFake) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    child = spawn(config, "--base-url", zep.base_url)
    _to_zep_and_tick(child)
    child.expect("Zep API key")
    child.send("wrong-key-123")
    child.send(ENTER)
    child.expect("Agents to connect")
    child.send(ENTER)
    code, rest = confirm(child, "y")
    assert code == 1
    assert "wrong-key-123" not in rest
    assert "Error:" in rest
    assert not config.exists()
    assert not (claude_dir / "settings.json").exists()


def test_ctrl_c_half_way_keeps_the_previous_config(tmp_path: Path, claude_dir: Path, zep: ZepFake) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    first = spawn(config)
    first.expect("Memory providers to enable")
    first.send(ENTER)
    first.expect("Agents to connect")
    first.send(ENTER)
    first.expect("Apply this setup")
    first.send("y")
    assert finish(first)[0] == 0
    before = config.read_bytes()
    settings_before = (claude_dir / "settings.json").read_bytes()

    child = spawn(config, "--base-url", zep.base_url)
    child.expect("Update the existing config")
    child.send("y")
    _to_zep_and_tick(child)
    child.expect("Zep API key")
    child.send("half-typed")
    child.sendintr()
    code, rest = finish(child)
    assert code == 130, rest
    assert "nothing was saved" in rest
    assert config.read_bytes() == before
    assert (claude_dir / "settings.json").read_bytes() == settings_before
    assert not zep.state.requests("POST", "/users")


def test_flags_answer_the_questions_and_declining_saves_nothing(tmp_path: Path, claude_dir: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    child = spawn(config, "--provider", "sqlite", "--agent", "claude")
    # providers and agents were pinned: no selection is asked
    code, out = confirm(child, "n", "User: alice", "Agents: Claude Code")
    assert code == 0, out
    assert "setup cancelled; nothing was saved" in out
    assert "Memory providers to enable" not in out
    assert not config.exists() and not (claude_dir / "settings.json").exists()
