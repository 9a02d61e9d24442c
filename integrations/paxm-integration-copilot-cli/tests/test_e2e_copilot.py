"""End to end with the real GitHub Copilot CLI (offline, fake Chat Completions server on 127.0.0.1).

Runs on the shared real-binary kit (``paxm_contracttest.harness.kit``, the Copilot CLI
description in ``harnesses``).  Wall times print as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.chat_completions import Recorded
from paxm_contracttest.harness.disposable_python import DisposablePython
from paxm_contracttest.harness.harnesses import CLAUDE, COPILOT, COPILOT_USER_HOOKS
from paxm_contracttest.harness.kit import (
    Harness,
    HarnessBox,
    Installed,
    capture_then_recall,
    cross_harness,
    installed_fixture,
    ok,
    paxm_removed_midway,
)
from paxm_contracttest.model_input import PASSIVE_OPEN, assert_no_hook_noise

pytestmark = [pytest.mark.harness, pytest.mark.slow]

#: Copilot passes additionalContext through as is: the envelope reaches the model unescaped
copilot = installed_fixture(COPILOT)
claude = installed_fixture(CLAUDE)
#: the user's own files in ~/.copilot (the kit's Copilot description writes them first)
USER_FILES = {"hooks/mine.json": COPILOT_USER_HOOKS, "settings.json": '{"model": "fake-model"}\n'}


def _garbage_free(request: Recorded) -> None:
    assert_no_hook_noise(request.user_text(), extra=("No such file",))


@pytest.fixture
def box(copilot: tuple[Harness, Installed], tmp_path: Path) -> HarnessBox:
    return HarnessBox(tmp_path / "box", *copilot)


def _hooks_file(box: HarnessBox) -> Path:
    return box.home / ".copilot" / "hooks" / "paxm.json"


def _user_files_unchanged(box: HarnessBox) -> None:
    for name, text in USER_FILES.items():
        assert (box.home / ".copilot" / name).read_text() == text, name


def test_copilot_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(box: HarnessBox) -> None:
    box.setup()
    box.generous_recall_budget()
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    try:
        with box.fake(marker=marker) as fake:
            seen = capture_then_recall(
                box,
                fake,
                marker=marker,
                decision="RUN_TOOL: Decision: release branches are named {marker}-<version>.",
                question="RUN_TOOL: which naming scheme did we decide on for release branches?",
            )
            assert any(s.has_tool_result for s in fake.agent_steps()[: len(seen.first_inputs)])  # the shell tool ran
            print(f"LATENCY copilot session 1 (tool call, capture): wall_s={seen.first.wall:.2f}")
            stored = [t for t in box.memory_texts() if marker in t]
            # one episode: the prompt (userPromptSubmitted) and the reply read from events.jsonl (agentStop)
            assert any(
                "GitHub Copilot CLI user input:" in t and "assistant response:\nNoted, I will remember that." in t
                for t in stored
            ), box.memory_texts()
            assert not any("TOOL_RAN_OK" in t for t in box.memory_texts())
            steps = fake.agent_steps()[len(seen.first_inputs) :]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert box.recalled(step.user_text(), marker), step.user_text()[-3000:]
                assert step.user_text().count(PASSIVE_OPEN) == 1
            print(f"LATENCY copilot session 2 (recall on every step): wall_s={seen.second.wall:.2f}")
            box.paxm("__hook-control", "--flush")
            replies = [t for t in box.memory_texts() if "which naming scheme" in t]
            assert any("[marker-seen]" in t for t in replies), replies  # the warm daemon's read of the reply too
            for request in fake.completions():
                _garbage_free(request)
    finally:
        box.stop_daemon()
    box.uninstall()
    assert not _hooks_file(box).exists()
    _user_files_unchanged(box)


def test_copilot_turns_complete_with_paxm_uninstalled_underneath_them(box: HarnessBox, tmp_path: Path) -> None:
    python = DisposablePython(tmp_path / "paxm-venv")
    done = python.paxm(box.config, "setup", "--yes", "--agent", "copilot", "--provider", "sqlite", env=box.env())
    assert done.returncode == 0, done.stderr
    assert str(python.python) in _hooks_file(box).read_text()  # the hooks run the disposable interpreter
    # start the hook daemon the way Copilot would (a cold one is not waited for)
    start = json.loads(_hooks_file(box).read_text())["hooks"]["sessionStart"][0]["bash"]
    subprocess.run(start, shell=True, input=b"{}", env=box.env(), capture_output=True, timeout=60, check=True)
    box.wait_for_daemon()
    try:
        with box.fake(hang=4.0) as fake:

            def remove() -> None:
                assert "<paxm-" in fake.completions()[0].user_text()  # the hooks ran with that interpreter
                # paxm goes away under the running turn: its interpreter, then its config
                python.remove()
                box.config.rename(box.config.with_suffix(".gone"))

            ok(paxm_removed_midway(box, fake, remove))
            # the next turn starts with stale hooks whose interpreter is gone: it runs as without paxm
            fake.hang = 0.0
            seen = len(fake.completions())
            ok(box.turn(fake, "Hello again"))
            assert fake.completions()[seen:]
            for request in fake.completions():
                _garbage_free(request)
            assert "<paxm-" not in fake.completions()[-1].user_text()
    finally:
        box.stop_daemon()
    assert _hooks_file(box).exists()  # the stale hooks were there all along


def test_decision_captured_by_claude_code_is_recalled_by_copilot(
    claude: tuple[Harness, Installed], box: HarnessBox
) -> None:
    first = HarnessBox(box.root, *claude)
    first.setup(COPILOT.agent)
    first.generous_recall_budget()
    box.generous_recall_budget()
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        run, inputs = cross_harness(first, box, marker=marker)
        assert all(box.recalled(text, marker) for text in inputs), [t[-2000:] for t in inputs]
        print(f"LATENCY copilot turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
