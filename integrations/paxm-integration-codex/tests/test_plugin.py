"""The shipped paxm-memory Codex plugin: layout, hooks.json, and the launcher's fallbacks."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from paxm_integration_codex import plugin
from paxm_integration_codex.events import NATIVE_EVENTS

SHIPPED = plugin.MARKETPLACE_DIR
PLUGIN_DIR = SHIPPED / "plugins" / plugin.PLUGIN_NAME


def test_marketplace_layout() -> None:
    market = json.loads((SHIPPED / ".agents" / "plugins" / "marketplace.json").read_text())
    assert market["name"] == plugin.MARKETPLACE_NAME
    (entry,) = market["plugins"]
    assert entry["name"] == plugin.PLUGIN_NAME and entry["source"] == {
        "source": "local",
        "path": "./plugins/paxm-memory",
    }
    manifest = json.loads((PLUGIN_DIR / ".codex-plugin" / "plugin.json").read_text())
    assert manifest["name"] == plugin.PLUGIN_NAME
    for key in ("skills", "mcpServers", "hooks"):
        assert (PLUGIN_DIR / manifest[key]).exists(), key
    mcp = json.loads((PLUGIN_DIR / ".mcp.json").read_text())
    assert mcp["mcpServers"]["paxm"]["args"] == ["mcp", "serve", "--agent", "codex"]
    skill = (PLUGIN_DIR / "skills" / "paxm" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: paxm\n") and "not instructions" in skill


def test_hooks_json_runs_the_launcher_for_every_event() -> None:
    hooks = json.loads((PLUGIN_DIR / "hooks" / "hooks.json").read_text())["hooks"]
    # PreToolUse is opt-in (agents.codex.hooks.pre_tool): a static hooks.json cannot follow the config
    always = [e for e in NATIVE_EVENTS if e.native != "PreToolUse"]
    assert list(hooks) == [e.native for e in always]
    for event in always:
        (group,) = hooks[event.native]
        assert group.get("matcher", "") == event.matcher
        (handler,) = group["hooks"]
        assert handler["command"] == f'sh "$PLUGIN_ROOT/hooks/paxm-hook.sh" {event.native}'
        assert handler["timeout"] == 10


def _launch(tmp_path: Path, event: str, path: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(PLUGIN_DIR / "hooks" / "paxm-hook.sh"), event],
        input='{"prompt": "x"}',
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": path, "HOME": str(tmp_path), **env},
    )


def test_launcher_falls_back_to_paxm_on_path_as_the_plugin_owner(tmp_path: Path) -> None:
    stub_dir = tmp_path / "bin"
    stub_dir.mkdir()
    stub = stub_dir / "paxm"
    stub.write_text('#!/bin/sh\necho "owner=$PAXM_INTEGRATION_OWNER args=$*"\n')
    stub.chmod(0o755)
    done = _launch(tmp_path, "UserPromptSubmit", f"{stub_dir}:/usr/bin:/bin")
    assert done.returncode == 0
    assert done.stdout.strip() == "owner=codex-plugin args=__hook --target codex --event UserPromptSubmit --json"
    # a failing paxm prints nothing and still exits 0
    stub.write_text("#!/bin/sh\necho partial\nexit 3\n")
    done = _launch(tmp_path, "Stop", f"{stub_dir}:/usr/bin:/bin")
    assert (done.returncode, done.stdout) == (0, "")


def test_launcher_without_paxm_or_for_unknown_events_does_nothing(tmp_path: Path) -> None:
    assert _launch(tmp_path, "UserPromptSubmit", "/usr/bin:/bin").stdout == ""
    assert _launch(tmp_path, "Nonsense", "/usr/bin:/bin").returncode == 0


def test_generated_copy_has_absolute_paths_and_private_modes(tmp_path: Path) -> None:
    dest = plugin.generated_dir(tmp_path / "paxm")
    config = tmp_path / "paxm" / "config.yaml"
    plugin_dir = plugin.generate_marketplace(
        dest, python="/venv/bin/python", client="/x/client.py", config_path=config, paxm_exe="/venv/bin/paxm"
    )
    launcher = (plugin_dir / "hooks" / "paxm-hook.sh").read_text()
    assert "PAXM_PYTHON=/venv/bin/python" in launcher and f"PAXM_CONFIG_FILE={config}" in launcher
    mcp = json.loads((plugin_dir / ".mcp.json").read_text())["mcpServers"]["paxm"]
    assert mcp == {"command": "/venv/bin/paxm", "args": ["--config", str(config), "mcp", "serve", "--agent", "codex"]}
    for path in (dest, *dest.rglob("*")):
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode & 0o077 == 0, (path, oct(mode))
    # regenerating swaps the tree in place; removing only deletes a tree paxm generated
    plugin.generate_marketplace(dest, python="/p", client="/c", config_path=config)
    assert plugin.remove_generated(tmp_path / "paxm") and not dest.exists()
    dest.mkdir(parents=True)
    assert not plugin.remove_generated(tmp_path / "paxm") and dest.exists()


def test_generating_never_writes_or_chmods_through_a_link_planted_in_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, victim: Path
) -> None:
    # another process swaps files of the half-built tree for links while paxm fills the launcher
    dest = plugin.generated_dir(tmp_path / "paxm")
    staging = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    import paxm_core.integration as kit

    real_fill = kit.fill_launcher

    def fill_and_plant(text: str, values: dict[str, str]) -> str:
        for relative in ("plugins/paxm-memory/.codex-plugin/plugin.json", "plugins/paxm-memory/hooks/paxm-hook.sh"):
            (staging / relative).unlink(missing_ok=True)
            (staging / relative).symlink_to(victim)
        return real_fill(text, values)

    monkeypatch.setattr(kit, "fill_launcher", fill_and_plant)
    with pytest.raises(FileExistsError):
        plugin.generate_marketplace(dest, python="/p", client="/c", config_path=tmp_path / "config.yaml")
    assert victim.read_text() == "not paxm's\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert not staging.exists() and not dest.exists()
