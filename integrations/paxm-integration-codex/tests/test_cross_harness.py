"""One memory across harnesses: a decision captured by the real Claude Code reaches a real Codex turn, and back.

Both binaries run in one sandbox (one HOME, one workspace, one paxm config with both agents
enabled) against their fake model servers, on the shared real-binary kit.  Claude Code runs
twice: the pinned 2.1.197 (the last release on Node 20) and the current release under the
pinned Node 24.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.anthropic import FakeAnthropic
from paxm_contracttest.fake_models.responses import FakeResponses, input_text
from paxm_contracttest.harness.claude import hook_blocks, model_text
from paxm_contracttest.harness.harnesses import CLAUDE, CLAUDE_CURRENT, CODEX
from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed, installed_fixture

pytestmark = [pytest.mark.harness, pytest.mark.slow]

ENVELOPE = '<paxm-recall version="1" mode="passive">'

codex = installed_fixture(CODEX)
claude = installed_fixture(CLAUDE, CLAUDE_CURRENT)


def _generous(box: HarnessBox) -> None:
    data = box.config_data()
    for agent in ("claude", "codex"):
        recall = data["agents"][agent]["hooks"]["user_input"]["recall"]
        recall["timeout"] = "2s"
        recall["initial"]["timeout"] = "2s"
    box.write_config_data(data)


def test_claude_decision_reaches_codex_and_back(
    claude: tuple[Harness, Installed], codex: tuple[Harness, Installed], tmp_path: Path
) -> None:
    sandbox = HarnessBox(tmp_path / "box", *claude)
    box = HarnessBox(tmp_path / "box", *codex)  # the same HOME, workspace and paxm config
    to_codex = f"PUFFIN-{uuid.uuid4().hex[:10]}"
    to_claude = f"GANNET-{uuid.uuid4().hex[:10]}"
    try:
        with (
            FakeAnthropic(tmp_path / "anthropic.jsonl", marker=to_claude) as anthropic,
            FakeResponses(tmp_path / "responses.jsonl", marker=to_codex) as responses,
        ):
            box.point_at(responses.url)
            box.paxm("setup", "--yes", "--agent", "claude", "--agent", "codex", "--provider", "sqlite")
            _generous(box)

            said = sandbox.turn(anthropic, f"Decision: the queue service is named {to_codex} from now on.")
            assert said.returncode == 0, said.stderr
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            assert any(to_codex in t and t.startswith("Claude Code") for t in box.memory_texts()), box.memory_texts()

            run = box.turn(responses, "What is the queue service named?")
            assert run.returncode == 0, run.stderr[-3000:]
            developer = input_text(responses.responses()[-1], ("developer",))
            start = developer.index(ENVELOPE)
            assert to_codex in developer[start : developer.index("</paxm-recall>", start)]
            assert run.reply.endswith("[marker-seen]")

            run = box.turn(responses, f"Decision: the cache cluster is named {to_claude}. RUN_TOOL first.")
            assert run.returncode == 0, run.stderr[-3000:]
            box.paxm("__hook-control", "--flush")
            assert any(to_claude in t and t.startswith("Codex") for t in box.memory_texts()), box.memory_texts()

            seen = len(anthropic.messages())
            asked = sandbox.turn(anthropic, "What is the cache cluster named?")
            assert asked.returncode == 0, asked.stderr
            text = model_text(anthropic.messages()[seen])
            blocks = [b for b in hook_blocks(text) if ENVELOPE in b]
            assert blocks and to_claude in blocks[0], text[-3000:]
            assert asked.reply.endswith("[marker-seen]")
    finally:
        box.stop_daemon()
