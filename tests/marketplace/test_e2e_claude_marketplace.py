"""The repository's marketplace with the real Claude Code binary (offline, fake Anthropic server).

``claude plugin marketplace add <this checkout>`` and ``claude plugin install paxm@paxm-plugins``,
exactly as a user does it, with paxm installed the way ``uv tool install paxm`` lays it out
(wheels of this checkout, nothing of paxm on PATH).  Runs the pinned release on Node 20 and the
current one on Node 24 (``paxm_contracttest.harness.harnesses``).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from marketplace_kit import ROOT, ToolBox, new_box

from paxm_contracttest.harness.claude import assert_no_garbage, hook_blocks, hooks_succeeded, model_text, seed_settings
from paxm_contracttest.harness.harnesses import CLAUDE, CLAUDE_CURRENT
from paxm_contracttest.harness.kit import (
    REPLY,
    Harness,
    Installed,
    Turn,
    installed_fixture,
    model_requests,
)

pytestmark = [pytest.mark.harness, pytest.mark.slow]

PLUGIN_ID = "paxm@paxm-plugins"
ENVELOPE = '<paxm-recall version="1" mode="passive">'
#: how Claude Code lists the plugin's skill and MCP server
SKILL = "paxm:paxm"
MCP_SERVER = "plugin:paxm:paxm"

claude_release = installed_fixture(CLAUDE, CLAUDE_CURRENT)


@pytest.fixture()
def box(claude_release: tuple[Harness, Installed], tmp_path: Path) -> ToolBox:
    return new_box(tmp_path / "box", *claude_release)


def _settings(box: ToolBox) -> Path:
    return box.home / ".claude" / "settings.json"


def _install_plugin(box: ToolBox) -> None:
    added = box.cli("plugin", "marketplace", "add", str(ROOT))
    assert "paxm-plugins" in added.stdout + added.stderr
    box.cli("plugin", "install", PLUGIN_ID)


def _plugin_skill_and_server(box: ToolBox, turn: Turn, body: dict[str, Any]) -> None:
    """The plugin's skill and MCP server reached the session (``init``) and the model request."""
    init = turn.extra["init"]
    assert SKILL in init.get("skills", []), init.get("skills")
    request = json.dumps(body)
    description = (ROOT / "skills" / "paxm" / "SKILL.md").read_text().split("description: ", 1)[1][:80]
    assert SKILL in request and description in request  # the model is told the skill exists
    servers = {s.get("name"): s.get("status") for s in init.get("mcp_servers", [])}
    # Claude does not wait for MCP servers in -p mode: on a loaded machine it may still connect
    assert servers.get(MCP_SERVER) in ("connected", "pending"), servers
    if servers[MCP_SERVER] == "connected":
        tools = [t.get("name", "") for t in body.get("tools", [])]
        # current releases defer MCP tools behind ToolSearch; older ones list them
        assert "mcp__plugin_paxm_paxm__paxm_recall" in tools or "ToolSearch" in tools, tools


def test_marketplace_install_recall_skill_and_uninstall(box: ToolBox, tool_venv: Path) -> None:
    original = seed_settings(box)
    box.install_paxm(tool_venv)
    box.tool_paxm("setup", "--yes", "--agent", "claude", "--integration", "claude-plugin", "--provider", "sqlite")
    assert json.loads(_settings(box).read_text()) == original  # the plugin owns the hooks, not settings.json
    box.generous_recall_budget()
    _install_plugin(box)
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    try:
        with box.fake(marker=marker) as fake:
            first = box.turn(fake, f"Decision: our release branches are named {marker}-<version> from now on.")
            hooks_succeeded(first)
            stored = [t for t in box.flushed_memories() if marker in t]
            assert stored and any(REPLY in t for t in stored), box.memory_texts()  # prompt and reply captured
            seen = len(model_requests(fake))
            second = box.turn(fake, "What naming scheme did we decide on for release branches?")
            hooks_succeeded(second)
            request = model_requests(fake)[seen]
            text = model_text(request)
            assert box.recalled(text, marker), text[-3000:]  # recalled in the next session
            assert second.reply.endswith("[marker-seen]")
            assert "<paxm-session-identity" in text  # the plugin's SessionStart hook
            assert len(hook_blocks(text)) == 2  # SessionStart + UserPromptSubmit, nothing twice
            assert len(second.durations("UserPromptSubmit")) == 1
            _plugin_skill_and_server(box, second, request.get("body") or {})
            for each in fake.messages():
                assert_no_garbage(model_text(each))
    finally:
        box.stop_daemon()

    box.cli("plugin", "uninstall", PLUGIN_ID)
    with box.fake("after", marker=marker) as fake:
        after = box.turn(fake, "What naming scheme did we decide on for release branches?")
        assert after.returncode == 0, after.stderr[-3000:]
        # only the user's own Stop hook (settings.json) runs: none of the plugin's is left
        assert [h["hookEvent"] for h in after.hooks] == ["Stop"], after.hooks
        assert after.reply.endswith("[marker-absent]")
        assert MCP_SERVER not in {s.get("name") for s in after.extra["init"].get("mcp_servers", [])}
        assert SKILL not in after.extra["init"].get("skills", [])
        assert all(ENVELOPE not in model_text(r) for r in fake.messages())
    installed = json.loads((box.home / ".claude" / "plugins" / "installed_plugins.json").read_text())
    assert PLUGIN_ID not in json.dumps(installed)
    box.cli("plugin", "marketplace", "remove", "paxm-plugins")
    box.tool_paxm("uninstall", "--agent", "claude", "--yes")
    settings = json.loads(_settings(box).read_text())
    assert settings.pop("enabledPlugins", {}) == {}
    assert settings.pop("extraKnownMarketplaces", {}) == {}
    assert settings == original


def test_plugin_without_paxm_tells_the_user_and_never_blocks(box: ToolBox) -> None:
    """No paxm anywhere: every hook exits 0 at once, SessionStart says how to install it, and
    the prompt reaches the model with nothing of paxm's added."""
    _install_plugin(box)
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    with box.fake(marker=marker) as fake:
        run = box.turn(fake, f"Hello, the codename is {marker}.")
        hooks_succeeded(run)
        assert run.reply.endswith("[marker-seen]")  # the prompt reached the model
        (start,) = [h for h in run.hooks if h.get("hookEvent") == "SessionStart"]
        hint = json.loads(start["stdout"])["systemMessage"]
        assert "uv tool install 'paxm[claude-code]'" in hint
        for hook in run.hooks:
            assert hook["hookEvent"] == "SessionStart" or hook.get("stdout", "") == "", hook
        for request in fake.messages():
            text = model_text(request)
            assert_no_garbage(text)
            assert ENVELOPE not in text and "<paxm-session-identity" not in text
            assert "paxm plugin:" not in text  # the hint is the user's, not the model's
