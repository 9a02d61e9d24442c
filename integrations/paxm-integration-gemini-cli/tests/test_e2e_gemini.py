"""End to end with the real Gemini CLI (offline, the fake Gemini API on 127.0.0.1).

Runs on the shared real-binary kit (``paxm_contracttest.harness.kit``, the Gemini CLI
description in ``harnesses``).  Wall times print as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.gemini import GeminiRequest
from paxm_contracttest.harness.disposable_python import DisposablePython
from paxm_contracttest.harness.harnesses import CLAUDE, GEMINI, GEMINI_SETTINGS
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
from paxm_contracttest.model_input import assert_no_hook_noise

pytestmark = [pytest.mark.harness, pytest.mark.slow]

#: Gemini escapes ``<`` and ``>`` of injected context: this is how the real envelope reaches the model
ENVELOPE, CLOSE = GEMINI.envelope

gemini = installed_fixture(GEMINI)
claude = installed_fixture(CLAUDE)


def _garbage_free(request: GeminiRequest) -> None:
    assert_no_hook_noise(request.user_text(), extra=("No such file",), open_tag="&lt;paxm-recall", close_tag=CLOSE)


@pytest.fixture
def box(gemini: tuple[Harness, Installed], tmp_path: Path) -> HarnessBox:
    return HarnessBox(tmp_path / "box", *gemini)


def _settings(box: HarnessBox) -> Path:
    return box.home / ".gemini" / "settings.json"


def _only_paxm_left(box: HarnessBox) -> None:
    """After uninstall the settings are the user's again."""
    assert json.loads(_settings(box).read_text()) == GEMINI_SETTINGS


def test_gemini_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(box: HarnessBox) -> None:
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
            first_steps = fake.agent_steps()[: len(seen.first_inputs)]
            assert any(s.has_tool_result for s in first_steps)  # the turn ran the shell tool
            print(f"LATENCY gemini session 1 (tool call, capture): wall_s={seen.first.wall:.2f}")
            stored = [t for t in box.memory_texts() if marker in t]
            # one episode: the prompt (BeforeAgent) and the reply (AfterAgent's prompt_response)
            assert any("Gemini CLI user input:" in t and "Noted, I will remember that." in t for t in stored), stored
            assert not any("TOOL_RAN_OK" in t for t in box.memory_texts())
            steps = fake.agent_steps()[len(seen.first_inputs) :]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert box.recalled(step.user_text(), marker), step.user_text()[-3000:]
                assert step.user_text().count(ENVELOPE) == 1
            assert "<paxm-recall" not in steps[0].text  # it arrives escaped, as documented
            assert "<hook_context>" in steps[0].user_text()  # Gemini's own wrapper around hook context
            print(f"LATENCY gemini session 2 (recall on every step): wall_s={seen.second.wall:.2f}")
            for request in fake.generations():
                _garbage_free(request)
    finally:
        box.stop_daemon()
    box.uninstall()
    _only_paxm_left(box)


def test_gemini_turns_complete_with_paxm_uninstalled_underneath_them(box: HarnessBox, tmp_path: Path) -> None:
    python = DisposablePython(tmp_path / "paxm-venv")
    done = python.paxm(box.config, "setup", "--yes", "--agent", "gemini", "--provider", "sqlite", env=box.env())
    assert done.returncode == 0, done.stderr
    assert str(python.python) in _settings(box).read_text()  # the hooks run the disposable interpreter
    # start the hook daemon the way Gemini would (a cold one is not waited for: the turn goes on without paxm)
    start = json.loads(_settings(box).read_text())["hooks"]["SessionStart"][-1]["hooks"][0]["command"]
    subprocess.run(start, shell=True, input=b"{}", env=box.env(), capture_output=True, timeout=60, check=True)
    box.wait_for_daemon()
    try:
        with box.fake(hang=4.0) as fake:

            def remove() -> None:
                # the hooks ran with the disposable interpreter: SessionStart's paxm context arrived
                assert "&lt;paxm-" in fake.generations()[0].user_text(), fake.generations()[0].user_text()[-2000:]
                # paxm goes away under the running turn: its interpreter, then its config
                python.remove()
                box.config.rename(box.config.with_suffix(".gone"))

            ok(paxm_removed_midway(box, fake, remove))
            # the next turn starts with stale hooks whose interpreter is gone: it runs as without paxm
            fake.hang = 0.0
            seen = len(fake.generations())
            ok(box.turn(fake, "Hello again"))
            assert fake.generations()[seen:]
            for request in fake.generations():
                _garbage_free(request)
            assert ENVELOPE not in fake.generations()[-1].user_text()
    finally:
        box.stop_daemon()
    assert "paxm-BeforeAgent" in _settings(box).read_text()  # the stale hooks were there all along


def test_decision_captured_by_claude_code_is_recalled_by_gemini(
    claude: tuple[Harness, Installed], box: HarnessBox
) -> None:
    first = HarnessBox(box.root, *claude)
    first.setup(GEMINI.agent)
    first.generous_recall_budget()
    box.generous_recall_budget()
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        run, inputs = cross_harness(first, box, marker=marker)
        assert all(box.recalled(text, marker) for text in inputs), [t[-2000:] for t in inputs]
        print(f"LATENCY gemini turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
