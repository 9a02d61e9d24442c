"""Point of action with the real Codex CLI (offline, fake Responses server on 127.0.0.1).

The sandbox's workspace is a real git working tree and the config turns on
``agents.codex.hooks.pre_tool.recall`` (off in the defaults), so setup installs Codex's
``PreToolUse`` hook.  A memory anchored to ``src/billing/tax.py`` is captured; when the model then
runs ``cat src/billing/tax.py``, the hook hands Codex that memory as ``additionalContext`` and
Codex gives it to the model with the tool's output.  Resuming the same session and running the
command again injects nothing: once per session.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest.fake_models.responses import FakeResponses, Recorded
from paxm_contracttest.harness.harnesses import CODEX
from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed, Turn, installed_fixture, ok

pytestmark = [pytest.mark.harness, pytest.mark.slow]

ENVELOPE = '<paxm-recall version="1" mode="passive">'
COMMAND = "cat src/billing/tax.py"

codex = installed_fixture(CODEX)


@pytest.fixture()
def box(codex: tuple[Harness, Installed], tmp_path: Path) -> HarnessBox:
    box = HarnessBox(tmp_path / "box", *codex)
    box.commit_workspace({"src/billing/tax.py": "def calculate_tax(amount):\n    return amount\n"})
    box.setup()
    box.generous_recall_budget()
    data = box.config_data()
    data["agents"]["codex"]["hooks"]["pre_tool"] = {
        "recall": {"enabled": True, "profile": "passive", "max_results": 20, "timeout": "2s"}
    }
    box.write_config_data(data)
    # setup again, keeping the config: installs (and trusts) the PreToolUse hook it now asks for
    box.paxm("setup", "--yes", "--force", "--agent", "codex", "--provider", "sqlite")
    assert "PreToolUse" in (box.home / ".codex" / "config.toml").read_text()
    return box


def _texts(item: Any) -> list[str]:
    content = item.get("content") if isinstance(item, dict) else None
    if isinstance(content, list):
        return [str(part.get("text", "")) for part in content if isinstance(part, dict)]
    return [str(item.get("output", ""))] if isinstance(item, dict) else []


def _since_user(request: Recorded) -> str:
    """The text of every ``input[]`` item after the latest user message (this turn's additions)."""
    body = request.get("body")
    items: list[Any] = body.get("input", []) if isinstance(body, dict) else []
    last_user = max(i for i, item in enumerate(items) if isinstance(item, dict) and item.get("role") == "user")
    return "\n".join(text for item in items[last_user + 1 :] for text in _texts(item))


def _tool_ran(request: Recorded) -> bool:
    body = request.get("body")
    items: list[Any] = body.get("input", []) if isinstance(body, dict) else []
    last_user = max(i for i, item in enumerate(items) if isinstance(item, dict) and item.get("role") == "user")
    return any(isinstance(item, dict) and item.get("type") == "function_call_output" for item in items[last_user:])


def _after_tool(fake: FakeResponses) -> list[str]:
    """This turn's additions in each request that carries a tool output."""
    return [_since_user(r) for r in fake.responses() if _tool_ran(r)]


def _resume(box: HarnessBox, fake: FakeResponses, prompt: str) -> Turn:
    """``codex exec resume --last``: the next turn of the same Codex session."""
    box.point_at(str(fake.url))
    argv = [
        str(box.installed.binary),
        "exec",
        "resume",
        "--last",
        "--skip-git-repo-check",
        "-o",
        str(box.root / "last-message.txt"),
        prompt,
    ]
    assert CODEX.run is not None
    return CODEX.run(box, argv, box.turn_env(str(fake.url)), 240)


def test_the_memory_anchored_to_a_file_is_injected_before_codex_runs_a_command_on_it(box: HarnessBox) -> None:
    marker = f"TURNSTONE-{uuid.uuid4().hex[:10]}"
    try:
        with box.fake(marker=marker) as fake:
            ok(box.turn(fake, f"Rule {marker}: calculate_tax in src/billing/tax.py must round half-even."))
            assert any(marker in t for t in box.flushed_memories())
        with box.fake("tool", tool_command=COMMAND) as fake:
            run = box.turn(fake, "RUN_TOOL: show me that module")
            ok(run)
            assert [h for h in run.hooks if h["hookEvent"] == "PreToolUse" and h["outcome"] == "Completed"], run.hooks
            after = _after_tool(fake)
            assert after, [json.dumps(r.get("body"))[-500:] for r in fake.responses()]
            assert marker not in json.dumps(fake.responses()[0].get("body"))  # the prompt's recall did not bring it
            start = after[0].index(ENVELOPE)
            block = after[0][start : after[0].index("</paxm-recall>", start)]
            assert marker in block and len(block) < 1000, block

            # the same session runs the command again: the model already has the memory
            seen = len(fake.responses())
            again = _resume(box, fake, "RUN_TOOL: show it once more")
            ok(again)
            assert [h for h in again.hooks if h["hookEvent"] == "PreToolUse"], again.hooks
            later = [_since_user(r) for r in fake.responses()[seen:] if _tool_ran(r)]
            assert later, [json.dumps(r.get("body"))[-500:] for r in fake.responses()[seen:]]
            assert all(marker not in text for text in later), later
    finally:
        box.stop_daemon()
