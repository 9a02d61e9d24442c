"""The repository's marketplace with the real Codex CLI (offline, fake Responses server).

``codex plugin marketplace add <this checkout>`` and ``codex plugin add paxm@paxm-plugins``, as a
user does it, with paxm installed the way ``uv tool install paxm`` lays it out (wheels of this
checkout, nothing of paxm on PATH).  Codex runs a plugin's hooks only once they are trusted;
``paxm setup --integration codex-plugin`` records that trust the way Codex's own ``/hooks``
screen does (hashes from ``codex app-server``'s ``hooks/list``) and, because this plugin is
installed, does not install its generated ``paxm-memory@paxm`` copy beside it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from marketplace_kit import ROOT, ToolBox, new_box

from paxm_contracttest.fake_models.responses import input_text
from paxm_contracttest.harness.harnesses import CODEX, codex_hooks_completed
from paxm_contracttest.harness.kit import REPLY, Harness, Installed, Turn, installed_fixture

pytestmark = [pytest.mark.harness, pytest.mark.slow]

PLUGIN_ID = "paxm@paxm-plugins"
ENVELOPE = '<paxm-recall version="1" mode="passive">'
HOOK_TIMEOUT_MS = 10_000

codex = installed_fixture(CODEX)


@pytest.fixture()
def box(codex: tuple[Harness, Installed], tmp_path: Path) -> ToolBox:
    return new_box(tmp_path / "box", *codex)


def _config(box: ToolBox) -> Path:
    return box.home / ".codex" / "config.toml"


def check_hooks(run: Turn, *events: str) -> None:
    """The turn finished; Codex ran (trusted) each of ``events`` once, successfully, within the hook timeout."""
    assert run.returncode == 0, run.stderr[-3000:]
    codex_hooks_completed(run, *events, within_ms=HOOK_TIMEOUT_MS)


def test_marketplace_plugin_hooks_trusted_and_a_decision_recalled(box: ToolBox, tool_venv: Path) -> None:
    original = _config(box).read_text()
    box.install_paxm(tool_venv)
    added = box.cli("plugin", "marketplace", "add", str(ROOT), check=False)
    assert added.returncode == 0 and "paxm-plugins" in added.stdout + added.stderr, added.stderr
    plugged = box.cli("plugin", "add", PLUGIN_ID, check=False)
    assert plugged.returncode == 0, plugged.stderr
    setup = box.tool_paxm("setup", "--yes", "--agent", "codex", "--integration", "codex-plugin", "--provider", "sqlite")
    said = setup.stdout + setup.stderr
    assert f"the {PLUGIN_ID} plugin is installed in Codex: it owns the hooks" in said, said
    assert "trusted 4 paxm hook(s)" in said, said  # SessionStart, UserPromptSubmit, PostToolUse, Stop
    listed = box.cli("plugin", "list", check=False).stdout
    assert PLUGIN_ID in listed and "paxm-memory@paxm" not in listed, listed  # one plugin, no second copy
    text = _config(box).read_text()
    assert "client.py" not in text  # no config.toml hooks either: nothing fires twice
    assert f'[hooks.state."{PLUGIN_ID}:hooks/codex-hooks.json:user_prompt_submit:0:0"]' in text
    box.generous_recall_budget()

    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        with box.fake(marker=marker) as fake:
            first = box.turn(fake, f"Decision: the metrics dashboard lives at {marker}.example. RUN_TOOL now.")
            check_hooks(first, "SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
            stored = [t for t in box.flushed_memories() if marker in t]
            assert stored and any(REPLY in t and "TOOL_RAN_OK" in t for t in stored), box.memory_texts()

            seen = len(fake.responses())
            second = box.turn(fake, "Where does the metrics dashboard live?")
            check_hooks(second, "SessionStart", "UserPromptSubmit", "Stop")
            developer = input_text(fake.responses()[seen], ("developer",))
            assert developer.count("<paxm-session-identity") == 1
            assert developer.count(ENVELOPE) == 1  # recalled once: nothing fired twice
            start = developer.index(ENVELOPE)
            assert marker in developer[start : developer.index("</paxm-recall>", start)]
            assert second.reply.endswith("[marker-seen]")
            # the plugin's skill is listed to the model, from the installed plugin's copy
            assert "- paxm:paxm: Recall and store long-lived memory with paxm." in developer
            assert "/paxm/0.1.0/skills/paxm/SKILL.md" in developer
            for request in fake.responses():
                assert "Traceback" not in input_text(request) and "hookSpecificOutput" not in input_text(request)
    finally:
        box.stop_daemon()
    # the plugin's MCP server is registered (codex exec 0.171 puts no MCP tools into the request)
    servers = box.cli("mcp", "list", check=False).stdout
    assert any(line.startswith("paxm ") and "paxm-run.sh mcp codex" in line for line in servers.splitlines()), servers

    removed = box.cli("plugin", "remove", PLUGIN_ID, check=False)
    assert removed.returncode == 0, removed.stderr
    with box.fake("after", marker=marker) as fake:
        after = box.turn(fake, "Where does the metrics dashboard live?")
        assert after.returncode == 0 and after.hooks == [], after.hooks  # no hook is left to run
        assert all(ENVELOPE not in input_text(r) for r in fake.responses())
    uninstalled = box.tool_paxm("uninstall", "--agent", "codex", "--yes")
    assert f"no longer trusting the {PLUGIN_ID} plugin's hooks" in uninstalled.stdout + uninstalled.stderr
    after_text = _config(box).read_text()
    assert "client.py" not in after_text and "paxm-memory@paxm" not in after_text
    assert f"{PLUGIN_ID}:hooks" not in after_text  # the trust setup recorded is gone
    assert after_text.startswith(original.split("[model_providers.fake]")[0].strip())


def test_plugin_without_paxm_never_blocks(box: ToolBox) -> None:
    """No paxm anywhere, the hooks trusted as ``/hooks`` records it: every hook completes at
    once and the prompt reaches the model with nothing of paxm's added."""
    from paxm_integration_codex import config_toml, trust

    assert box.cli("plugin", "marketplace", "add", str(ROOT), check=False).returncode == 0
    assert box.cli("plugin", "add", PLUGIN_ID, check=False).returncode == 0
    hooks = trust.list_hooks(str(box.installed.binary), box.workspace, env=box.turn_env())
    doc, original = config_toml.read_config(_config(box))
    assert len(trust.record_trust(doc, hooks, lambda h: h.plugin_id == PLUGIN_ID)) == 4
    config_toml.write_config(_config(box), doc, original)
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    with box.fake(marker=marker) as fake:
        run = box.turn(fake, f"Hello, the codename is {marker}.")
        check_hooks(run, "SessionStart", "UserPromptSubmit", "Stop")
        assert run.reply.endswith("[marker-seen]")  # the prompt reached the model
        # SessionStart answered {"systemMessage": ...}, a field of Codex's hook output schema: the
        # hook "Completed" (a reply Codex rejects makes it "Failed"); `codex exec` does not print it
        for request in fake.responses():
            text = input_text(request)
            assert ENVELOPE not in text and "<paxm-session-identity" not in text and "paxm plugin:" not in text
