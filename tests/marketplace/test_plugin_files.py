"""The repository's plugin marketplace: manifests, hook commands, the skill copies, file modes.

The marketplaces (``.claude-plugin/marketplace.json`` for Claude Code,
``.agents/plugins/marketplace.json`` for Codex) both point at ``plugins/paxm-memory``; the real
binaries install and run it in ``test_e2e_claude_marketplace.py`` and
``test_e2e_codex_marketplace.py``.  These checks are what those runs rely on and are cheap.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugins" / "paxm-memory"
SKILL = ROOT / "skills" / "paxm"
#: everything the marketplace ships
SHIPPED = (ROOT / ".claude-plugin", ROOT / ".agents" / "plugins", PLUGIN, SKILL)

#: the hook command each event runs: the launcher, its path in double quotes, expanded by the
#: shell from the environment the harness sets (never pasted into the command text)
HOOK_COMMAND = re.compile(r'^sh "\$(CLAUDE_PLUGIN_ROOT|PLUGIN_ROOT)/scripts/paxm-run\.sh" hook (claude|codex) (\w+)$')


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_claude_marketplace_points_at_the_plugin() -> None:
    market = _json(ROOT / ".claude-plugin" / "marketplace.json")
    assert market["name"] == "paxm-plugins"
    (entry,) = market["plugins"]
    assert entry["name"] == "paxm"
    assert (ROOT / entry["source"]).resolve() == PLUGIN
    manifest = _json(PLUGIN / ".claude-plugin" / "plugin.json")
    assert manifest["name"] == entry["name"] and re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])


def test_codex_marketplace_points_at_the_plugin() -> None:
    market = _json(ROOT / ".agents" / "plugins" / "marketplace.json")
    assert market["name"] == "paxm-plugins"
    (entry,) = market["plugins"]
    assert entry["source"]["source"] == "local"
    assert (ROOT / entry["source"]["path"]).resolve() == PLUGIN
    manifest = _json(PLUGIN / ".codex-plugin" / "plugin.json")
    assert manifest["name"] == entry["name"] == "paxm"
    for key in ("skills", "mcpServers", "hooks"):
        assert (PLUGIN / manifest[key]).exists(), key
    # the same version for both harnesses: one plugin directory, one release
    assert manifest["version"] == _json(PLUGIN / ".claude-plugin" / "plugin.json")["version"]


def test_codex_plugin_id_is_the_one_paxm_setup_trusts() -> None:
    from paxm_integration_codex import plugin

    market = _json(ROOT / ".agents" / "plugins" / "marketplace.json")
    assert plugin.REPOSITORY_PLUGIN_ID == f"{market['plugins'][0]['name']}@{market['name']}"


@pytest.mark.parametrize(
    ("hooks_file", "root_var", "target", "events"),
    [
        ("hooks.json", "CLAUDE_PLUGIN_ROOT", "claude", ["SessionStart", "UserPromptSubmit", "PostToolUse"]),
        ("codex-hooks.json", "PLUGIN_ROOT", "codex", ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"]),
    ],
)
def test_hook_commands_run_the_quoted_launcher(hooks_file: str, root_var: str, target: str, events: list[str]) -> None:
    hooks = _json(PLUGIN / "hooks" / hooks_file)["hooks"]
    assert set(events) <= set(hooks)
    if target == "claude":
        assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop"}
    for event, groups in hooks.items():
        (group,) = groups
        (handler,) = group["hooks"]
        match = HOOK_COMMAND.match(handler["command"])
        assert match, handler["command"]
        assert match.groups() == (root_var, target, event)
        assert handler["type"] == "command" and handler["timeout"] == 10
        assert "async" not in handler  # the prompt hook's output must reach the model


def test_mcp_server_entries_run_the_launcher() -> None:
    for name, root, target in (
        (".mcp.json", "CLAUDE_PLUGIN_ROOT", "claude"),
        ("codex-mcp.json", "PLUGIN_ROOT", "codex"),
    ):
        server = _json(PLUGIN / name)["mcpServers"]["paxm"]
        assert server == {"command": "sh", "args": [f"${{{root}}}/scripts/paxm-run.sh", "mcp", target]}


def test_skill_is_shipped_identically_in_the_repository_and_the_plugin() -> None:
    ours = sorted(p.relative_to(SKILL) for p in SKILL.rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(PLUGIN / "skills" / "paxm") for p in (PLUGIN / "skills" / "paxm").rglob("*"))
    assert ours == [p for p in theirs if (PLUGIN / "skills" / "paxm" / p).is_file()]
    for rel in ours:
        assert (SKILL / rel).read_bytes() == (PLUGIN / "skills" / "paxm" / rel).read_bytes(), rel


#: the plugins ``paxm setup --integration claude-plugin`` / ``codex-plugin`` generate ship the skill too
GENERATED_SKILLS = (
    ROOT / "integrations/paxm-integration-claude-code/src/paxm_integration_claude_code/marketplace/plugins/paxm-claude",
    ROOT / "integrations/paxm-integration-codex/src/paxm_integration_codex/marketplace/plugins/paxm-memory",
)


@pytest.mark.parametrize("plugin", GENERATED_SKILLS, ids=["claude-plugin", "codex-plugin"])
def test_generated_plugins_ship_the_same_skill(plugin: Path) -> None:
    shipped = plugin / "skills" / "paxm" / "SKILL.md"
    assert shipped.read_bytes() == (SKILL / "SKILL.md").read_bytes()


def test_skill_frontmatter_and_what_it_teaches() -> None:
    text = (SKILL / "SKILL.md").read_text(encoding="utf-8")
    head, _, body = text.removeprefix("---\n").partition("\n---\n")
    fields = dict(line.split(": ", 1) for line in head.splitlines())
    assert fields["name"] == "paxm"
    assert 100 < len(fields["description"]) <= 1024  # the skill loaders' limit
    for needle in ("paxm_recall", "paxm_remember", "paxm recall --query", "paxm remember --", "<paxm-recall"):
        assert needle in body, needle
    assert "uv tool install paxm" in body  # what to tell the user when paxm is missing


def test_nothing_shipped_is_group_or_world_writable_or_a_symlink() -> None:
    files = [p for d in SHIPPED for p in d.rglob("*")]
    assert files
    for path in files:
        assert not path.is_symlink(), path  # a harness copies the plugin: a link would point outside it
    tracked = subprocess.run(
        ["git", "ls-files", "-s", "--", *(str(d.relative_to(ROOT)) for d in SHIPPED)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if tracked.returncode != 0 or not tracked.stdout.strip():
        pytest.skip("not a git checkout with the plugin files committed")
    modes = {line.split()[0] for line in tracked.stdout.splitlines()}
    assert modes == {"100644"}, modes  # the launcher runs as `sh <file>`: it needs no execute bit
