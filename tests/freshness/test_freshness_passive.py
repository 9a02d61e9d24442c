"""Freshness through the real passive path (SQLite provider, capture queue) and ``paxm recall``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paxm_core.anchors import ANCHORS_KEY, read_anchors
from paxm_core.capture import CaptureQueue, DeliveryWorker, default_queue_path, routes_from_write_profiles
from paxm_core.passive.processor import HookProcessor
from paxm_core.plugins import get_plugin_manager
from paxm_core.runtime import Runtime

from .conftest import TAX

ENVELOPE = '<paxm-recall version="1" mode="passive">'


def _config(directory: Path, *, enabled: bool = True) -> Path:
    from paxm_core.config import load_config, save_config

    path = directory / "config.yaml"
    config = load_config(path)
    config.identity.user_id = "alice"
    config.providers["sqlite"].path = str(directory / "memory.sqlite")
    config.agents["claude"].enabled = True
    config.freshness.enabled = None if enabled else False
    for profile in ("passive", "passive_initial"):
        for route in config.recall_profiles[profile].providers:
            route.timeout = 10.0
    save_config(config, path)
    return path


class Env:
    def __init__(self, config: Path, *, claude: bool = False) -> None:
        import paxm_provider_sqlite

        pm = get_plugin_manager(load_entrypoints=False)
        pm.register(paxm_provider_sqlite, name="sqlite")
        if claude:
            import paxm_integration_claude_code

            pm.register(paxm_integration_claude_code, name="claude")
        self.runtime = Runtime.load(str(config), plugin_manager=pm, telemetry=None)
        self.queue = CaptureQueue(
            default_queue_path(self.runtime.config),
            routes=routes_from_write_profiles(self.runtime.config.write_profiles),
        )
        self.processor = HookProcessor(self.runtime, self.queue, session_state_path=config.parent / "state.json")

    def hook(self, event: str, payload: dict[str, Any]) -> str:
        answer = self.processor.handle_hook(
            {"target": "claude", "event": event, "raw": json.dumps(payload), "mode": "text", "captured_at": time.time()}
        )
        return str(answer["output"])

    def deliver(self) -> None:
        worker = DeliveryWorker(
            self.queue, self.runtime.router, self.runtime.config.capture_queue, self.runtime.config.write_profiles
        )
        assert worker.flush(timeout=10, seal_open=True).ok

    def close(self) -> None:
        self.processor.close()
        self.queue.close()
        self.runtime.close()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(_config(tmp_path / "cfg"))
    yield e
    e.close()


def _capture(env: Env, repo: Path, session: str, prompt: str, reply: str) -> None:
    env.hook("user_input", {"session_id": session, "cwd": str(repo / "src"), "prompt": prompt})
    env.hook("turn_end", {"session_id": session, "cwd": str(repo / "src"), "last_assistant_message": reply})
    env.deliver()


def test_a_captured_turn_carries_the_union_of_its_anchors(env: Env, repo: Path) -> None:
    _capture(env, repo, "s1", "Where is VAT computed? README.md says nothing", "In calculate_tax of billing/tax.py.")
    [hit] = env.runtime.tools.recall("VAT computed", profile="default", workspace=str(repo)).hits
    anchors = read_anchors(hit.metadata)
    assert anchors is not None and hit.metadata[ANCHORS_KEY]
    assert anchors.files == ("README.md", "src/billing/tax.py")
    assert anchors.symbols == (("calculate_tax", "src/billing/tax.py"),)


def test_a_stale_memory_is_marked_and_demoted_behind_a_fresh_one(env: Env, repo: Path) -> None:
    _capture(env, repo, "s1", "Decision: VAT lives in billing/tax.py (calculate_tax).", "Recorded the VAT decision.")
    fresh = env.hook("user_input", {"session_id": "s2", "cwd": str(repo), "prompt": "where is the VAT decision?"})
    assert ENVELOPE in fresh and "freshness=" not in fresh and "billing/tax.py" in fresh
    (repo / "src" / "billing" / "tax.py").unlink()
    only_stale = env.hook("user_input", {"session_id": "s3", "cwd": str(repo), "prompt": "where is the VAT decision?"})
    assert 'freshness="stale" reason="src/billing/tax.py no longer exists"' in only_stale
    # a memory with no anchors about the same subject is fresh: the stale one is left out
    env.runtime.tools.remember("VAT decision: it moved to the invoicing service.", profile="ltm")
    both = env.hook("user_input", {"session_id": "s4", "cwd": str(repo), "prompt": "where is the VAT decision?"})
    assert "invoicing service" in both and "freshness=" not in both and "calculate_tax" not in both


def test_freshness_off_records_and_checks_nothing(tmp_path: Path, repo: Path) -> None:
    e = Env(_config(tmp_path / "cfg", enabled=False))
    try:
        _capture(e, repo, "s1", "Decision: VAT lives in billing/tax.py.", "Recorded the VAT decision.")
        [hit] = e.runtime.tools.recall("VAT decision", profile="default", workspace=str(repo)).hits
        assert ANCHORS_KEY not in hit.metadata
    finally:
        e.close()


def _paxm(config: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAXM_")}
    argv = [sys.executable, "-c", "from paxm_core.cli import main; main()", "--config", str(config), *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=60, check=True)


def test_paxm_recall_shows_freshness_in_text_and_json(tmp_path: Path, repo: Path) -> None:
    config = tmp_path / "cli" / "config.yaml"
    config.parent.mkdir()
    _paxm(config, repo / "src", "remember", "--text", "Rounding of VAT happens in billing/tax.py calculate_tax")
    _paxm(config, repo, "remember", "--text", "Rounding of VAT is documented nowhere else")
    text = _paxm(config, repo, "recall", "-q", "rounding VAT").stdout
    headings = [line for line in text.splitlines() if line.startswith("### Memory")]
    assert sorted(headings) == ["### Memory 1 (sqlite)", '### Memory 2 (sqlite) freshness="fresh"'] or sorted(
        headings
    ) == ['### Memory 1 (sqlite) freshness="fresh"', "### Memory 2 (sqlite)"]
    (repo / "src" / "billing" / "tax.py").write_text(TAX.replace("calculate_tax", "vat_of"))
    text = _paxm(config, repo, "recall", "-q", "rounding VAT").stdout
    assert 'freshness="stale" reason="calculate_tax no longer found in src/billing/tax.py"' in text
    hits = json.loads(_paxm(config, repo, "recall", "-q", "rounding VAT", "--json").stdout)["hits"]
    anchored = [h for h in hits if "freshness" in h]
    plain = [h for h in hits if "freshness" not in h]
    assert len(anchored) == 1 and len(plain) == 1
    assert anchored[0]["freshness"] == {
        "state": "stale",
        "anchored": True,
        "reason": "calculate_tax no longer found in src/billing/tax.py",
    }


# -- point of action ---------------------------------------------------------------------------


@pytest.fixture
def claude_env(tmp_path: Path) -> Iterator[Env]:
    from paxm_core.config import load_config, save_config
    from paxm_core.config.defaults import pre_tool_recall
    from paxm_core.config.model import AgentHookConfig

    path = _config(tmp_path / "cfg")
    config = load_config(path)
    config.agents["claude"].hooks["pre_tool"] = AgentHookConfig(recall=pre_tool_recall())
    save_config(config, path)
    e = Env(path, claude=True)
    yield e
    e.close()


def _pre_tool(env: Env, repo: Path, session: str, tool: str, tool_input: dict[str, Any]) -> str:
    payload = {"session_id": session, "cwd": str(repo), "hook_event_name": "PreToolUse"}
    answer = env.processor.handle_hook(
        {
            "target": "claude",
            "event": "PreToolUse",
            "raw": json.dumps({**payload, "tool_name": tool, "tool_input": tool_input}),
            "mode": "text",
            "captured_at": time.time(),
        }
    )
    return str(answer["output"])


def test_a_fresh_anchored_memory_is_injected_before_an_edit_once_per_session(claude_env: Env, repo: Path) -> None:
    _capture(claude_env, repo, "s1", "Rule: calculate_tax in billing/tax.py rounds half-even.", "Noted the rule.")
    claude_env.runtime.tools.remember("An unanchored note about VAT rounding half-even.", profile="ltm")
    edit = {"file_path": str(repo / "src" / "billing" / "tax.py"), "old_string": "a", "new_string": "b"}
    out = _pre_tool(claude_env, repo, "s2", "Edit", edit)
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "PreToolUse"
    block = context["additionalContext"]
    assert block.startswith(ENVELOPE) and "rounds half-even" in block and "unanchored" not in block
    assert len(block) <= 1000
    assert _pre_tool(claude_env, repo, "s2", "Edit", edit) == ""  # once per session
    assert "rounds half-even" in _pre_tool(claude_env, repo, "s3", "Bash", {"command": "pytest src/billing/tax.py"})
    # another file, or a tool input naming no file of the tree: nothing
    assert _pre_tool(claude_env, repo, "s4", "Edit", {"file_path": str(repo / "README.md")}) == ""
    assert _pre_tool(claude_env, repo, "s4", "Bash", {"command": "ls -la"}) == ""
    # stale: the symbol the memory names is gone, so it is never injected at the point of action
    (repo / "src" / "billing" / "tax.py").write_text("")
    assert _pre_tool(claude_env, repo, "s5", "Edit", edit) == ""


def test_point_of_action_off(tmp_path: Path, repo: Path) -> None:
    from paxm_core.config import load_config, save_config
    from paxm_core.config.defaults import pre_tool_recall
    from paxm_core.config.model import AgentHookConfig

    path = _config(tmp_path / "cfg")
    config = load_config(path)
    config.agents["claude"].hooks["pre_tool"] = AgentHookConfig(recall=pre_tool_recall())
    config.freshness.point_of_action = False
    save_config(config, path)
    e = Env(path, claude=True)
    try:
        _capture(e, repo, "s1", "Rule: VAT in billing/tax.py must round half-even.", "Noted.")
        assert _pre_tool(e, repo, "s2", "Write", {"file_path": str(repo / "src" / "billing" / "tax.py")}) == ""
    finally:
        e.close()
