"""The paxm-claude plugin: shipped marketplace layout, generated copy, launchers."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import paxm_integration_claude_code as pkg
from paxm_contracttest.harness import require
from paxm_core.integration import client_path, fill_launcher, interpreter_path
from paxm_integration_claude_code.plugin import (
    MARKETPLACE_DIR,
    PLUGIN_NAME,
    generate_marketplace,
    generated_dir,
    remove_generated,
)

PLUGIN = MARKETPLACE_DIR / "plugins" / PLUGIN_NAME
EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop"]


def test_shipped_marketplace_layout() -> None:
    market = json.loads((MARKETPLACE_DIR / ".claude-plugin" / "marketplace.json").read_text())
    assert market["name"] == "paxm"
    (entry,) = market["plugins"]
    assert entry["name"] == PLUGIN_NAME and (MARKETPLACE_DIR / entry["source"]).resolve() == PLUGIN.resolve()
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == PLUGIN_NAME and manifest["version"] == pkg.__version__
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert list(hooks) == EVENTS
    for event, groups in hooks.items():
        (handler,) = groups[0]["hooks"]
        assert handler["command"] == f'sh "${{CLAUDE_PLUGIN_ROOT}}/hooks/paxm-hook.sh" {event}'
        assert handler["timeout"] == 10
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    mcp = json.loads((PLUGIN / ".mcp.json").read_text())
    assert mcp == {"mcpServers": {"paxm": {"command": "sh", "args": ["${CLAUDE_PLUGIN_ROOT}/scripts/paxm-mcp.sh"]}}}
    skill = (PLUGIN / "skills" / "paxm" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: paxm\ndescription: ")
    assert "paxm recall --query" in skill and "paxm remember" in skill


def _recorder(tmp_path: Path) -> tuple[Path, Path]:
    """A fake executable that records its argv and PAXM_INTEGRATION_OWNER."""
    log = tmp_path / "calls.jsonl"
    script = tmp_path / "bin" / "recorder"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write(json.dumps({'argv': sys.argv[1:], 'owner': os.environ.get('PAXM_INTEGRATION_OWNER')}) + '\\n')\n"
        "print('CONTEXT-FROM-PAXM')\n"
    )
    script.chmod(0o755)
    return script, log


def _calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_generated_launcher_runs_the_client_with_absolute_paths(tmp_path: Path) -> None:
    fake_python, log = _recorder(tmp_path)
    config = tmp_path / "my paxm's dir" / "config.yaml"  # spaces and a quote survive quoting
    dest = generated_dir(config.parent)
    plugin = generate_marketplace(dest, python=str(fake_python), client=str(client_path()), config_path=config)
    launcher = plugin / "hooks" / "paxm-hook.sh"
    assert stat.S_IMODE(launcher.stat().st_mode) == 0o700
    for path in (dest, *dest.rglob("*")):  # every file and directory of the copy is private
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    env = {"PATH": "/usr/bin:/bin", "CLAUDE_PLUGIN_ROOT": str(plugin)}
    done = subprocess.run(["sh", str(launcher), "UserPromptSubmit"], input=b"{}", env=env, capture_output=True)
    assert done.returncode == 0 and done.stdout == b"CONTEXT-FROM-PAXM\n"
    (call,) = _calls(log)
    assert call == {
        "argv": [
            "-I",
            "-S",
            str(client_path()),
            "--config",
            str(config),
            "--target",
            "claude",
            "--event",
            "UserPromptSubmit",
        ],
        "owner": "claude-plugin",
    }
    # unknown events are ignored without running anything
    assert subprocess.run(["sh", str(launcher), "Bogus"], env=env).returncode == 0
    assert len(_calls(log)) == 1


def test_generated_launcher_passes_a_custom_queue(tmp_path: Path) -> None:
    fake_python, log = _recorder(tmp_path)
    dest = generated_dir(tmp_path / "cfg")
    plugin = generate_marketplace(
        dest,
        python=str(fake_python),
        client=str(client_path()),
        config_path=tmp_path / "cfg" / "c.yaml",
        queue_path="/q/x.sqlite",
    )
    subprocess.run(["sh", str(plugin / "hooks" / "paxm-hook.sh"), "Stop"], env={"PATH": "/usr/bin:/bin"}, check=True)
    assert _calls(log)[0]["argv"][-2:] == ["--queue", "/q/x.sqlite"]  # type: ignore[index]


def test_shipped_launchers_fall_back_to_the_paxm_command(tmp_path: Path) -> None:
    fake_paxm, log = _recorder(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "PAXM_BINARY": str(fake_paxm)}
    done = subprocess.run(["sh", str(PLUGIN / "hooks" / "paxm-hook.sh"), "Stop"], env=env, capture_output=True)
    assert done.returncode == 0
    subprocess.run(["sh", str(PLUGIN / "scripts" / "paxm-mcp.sh")], env=env, check=True, capture_output=True)
    hook, mcp = _calls(log)
    assert hook == {"argv": ["__hook", "--target", "claude", "--event", "Stop"], "owner": "claude-plugin"}
    assert mcp["argv"] == ["mcp", "serve", "--agent", "claude"]
    # no paxm anywhere: the hook still exits 0 silently, the MCP launcher says what is missing
    bare = {"PATH": str(tmp_path / "empty")}
    done = subprocess.run(["/bin/sh", str(PLUGIN / "hooks" / "paxm-hook.sh"), "Stop"], env=bare, capture_output=True)
    assert (done.returncode, done.stdout) == (0, b"")
    done = subprocess.run(["/bin/sh", str(PLUGIN / "scripts" / "paxm-mcp.sh")], env=bare, capture_output=True)
    assert done.returncode == 127 and b"paxm setup --integration claude-plugin" in done.stderr


def test_generated_mcp_launcher_uses_the_config(tmp_path: Path) -> None:
    fake_paxm, log = _recorder(tmp_path)
    config = tmp_path / "cfg" / "config.yaml"
    plugin = generate_marketplace(
        generated_dir(config.parent),
        python=interpreter_path(),
        client=str(client_path()),
        config_path=config,
        paxm_exe=str(fake_paxm),
    )
    subprocess.run(
        ["sh", str(plugin / "scripts" / "paxm-mcp.sh")], env={"PATH": "/usr/bin:/bin"}, check=True, capture_output=True
    )
    assert _calls(log)[0]["argv"] == ["--config", str(config), "mcp", "serve", "--agent", "claude"]


def test_regenerate_and_remove(tmp_path: Path) -> None:
    config_dir = tmp_path / "cfg"
    dest = generated_dir(config_dir)
    generate_marketplace(dest, python="/a/python", client="/a/client.py", config_path=config_dir / "c.yaml")
    (dest / "stale-file").write_text("x")
    generate_marketplace(dest, python="/b/python", client="/b/client.py", config_path=config_dir / "c.yaml")
    assert not (dest / "stale-file").exists()
    assert "PAXM_PYTHON=/b/python" in (dest / "plugins" / PLUGIN_NAME / "hooks" / "paxm-hook.sh").read_text()
    assert sorted(p.name for p in dest.parent.iterdir()) == ["claude-plugin"]  # no staging leftovers
    foreign = config_dir / "integrations" / "other"
    foreign.mkdir()
    assert remove_generated(config_dir) and not dest.exists() and foreign.exists()
    assert not remove_generated(config_dir)  # idempotent


def test_remove_refuses_a_directory_paxm_did_not_generate(tmp_path: Path) -> None:
    dest = generated_dir(tmp_path)
    dest.mkdir(parents=True)
    (dest / "mine.txt").write_text("user data")
    assert not remove_generated(tmp_path) and (dest / "mine.txt").exists()


def test_fill_launcher_requires_every_placeholder() -> None:
    with pytest.raises(ValueError, match="PAXM_NOPE"):
        fill_launcher("PAXM_PYTHON=''\n", {"PAXM_NOPE": "x"})
    assert fill_launcher("A=1\nPAXM_PYTHON=''\n", {"PAXM_PYTHON": "/p q/\\1"}) == "A=1\nPAXM_PYTHON='/p q/\\1'\n"


def test_wheel_ships_the_marketplace(tmp_path: Path) -> None:
    if shutil.which("uv") is None:
        require("uv is needed to build the wheel")
    project = Path(pkg.__file__).resolve().parents[2]
    done = subprocess.run(
        ["uv", "build", "--wheel", "--out-dir", str(tmp_path), str(project)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    base = "paxm_integration_claude_code/marketplace/"
    for rel in (
        ".claude-plugin/marketplace.json",
        "plugins/paxm-claude/.claude-plugin/plugin.json",
        "plugins/paxm-claude/.mcp.json",
        "plugins/paxm-claude/hooks/hooks.json",
        "plugins/paxm-claude/hooks/paxm-hook.sh",
        "plugins/paxm-claude/scripts/paxm-mcp.sh",
        "plugins/paxm-claude/skills/paxm/SKILL.md",
    ):
        assert base + rel in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "claude_code = paxm_integration_claude_code" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.parametrize("breakage", ["interpreter-fails", "interpreter-removed", "client-removed"])
def test_generated_launcher_fails_open_when_paxm_is_gone(tmp_path: Path, breakage: str) -> None:
    """Issue 13 item 8: a stale install exits 0 and prints nothing (exit 2 would block the prompt)."""
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\necho 'partial output'\necho \"can't open file\" >&2\nexit 2\n")
    python.chmod(0o755)
    client = tmp_path / "site" / "client.py"
    client.parent.mkdir()
    client.write_text("")
    plugin = generate_marketplace(
        generated_dir(tmp_path / "cfg"), python=str(python), client=str(client), config_path=tmp_path / "cfg" / "c.yaml"
    )
    if breakage == "interpreter-removed":
        python.unlink()
    elif breakage == "client-removed":
        client.unlink()
    env = {"PATH": "/usr/bin:/bin", "PAXM_BINARY": str(python)}
    for event in EVENTS:
        done = subprocess.run(
            ["sh", str(plugin / "hooks" / "paxm-hook.sh"), event], input=b"{}", env=env, capture_output=True
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), event
