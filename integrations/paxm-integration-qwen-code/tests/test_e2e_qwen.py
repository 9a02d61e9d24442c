"""End to end with the real Qwen Code CLI (offline, fake Chat Completions server on 127.0.0.1).

Runs on the shared real-binary kit (``paxm_contracttest.harness.kit``, the Qwen Code
description in ``harnesses``).  Wall times print as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI
from paxm_contracttest.harness.harnesses import CLAUDE, QWEN, QWEN_SETTINGS
from paxm_contracttest.harness.kit import (
    Harness,
    HarnessBox,
    Installed,
    capture_then_recall,
    cross_harness,
    installed_fixture,
    model_requests,
    ok,
    paxm_removed_midway,
)
from paxm_contracttest.model_input import assert_no_hook_noise

pytestmark = [pytest.mark.harness, pytest.mark.slow]

#: Qwen HTML-escapes the injected context: this is how the real envelope reaches the model
ENVELOPE, CLOSE = QWEN.envelope


def _garbage_free(fake: FakeOpenAI) -> None:
    for request in fake.completions():  # every completion, side requests too
        assert_no_hook_noise(request.user_text(), open_tag="&lt;paxm-recall", close_tag=CLOSE)


qwen = installed_fixture(QWEN)
claude = installed_fixture(CLAUDE)


@pytest.fixture
def box(qwen: tuple[Harness, Installed], tmp_path: Path) -> HarnessBox:
    harness, installed = qwen
    return HarnessBox(tmp_path / "box", harness, installed)


def _only_qwen_changed_it(box: HarnessBox) -> None:
    """After uninstall the settings are the user's again, plus the ``$version`` Qwen itself adds."""
    data = json.loads((box.home / ".qwen" / "settings.json").read_text())
    data.pop("$version", None)
    assert data == QWEN_SETTINGS


def test_qwen_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(box: HarnessBox) -> None:
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
            first_steps = model_requests(fake)[: len(seen.first_inputs)]
            assert any(s.has_tool_result for s in first_steps)  # the turn ran the shell tool
            print(f"LATENCY qwen session 1 (tool call, capture): wall_s={seen.first.wall:.2f}")
            assert not any("TOOL_RAN_OK" in t for t in box.memory_texts())
            steps = model_requests(fake)[len(seen.first_inputs) :]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert box.recalled(step.user_text(), marker), step.user_text()[-3000:]
                assert step.user_text().count(ENVELOPE) == 1
            assert "<paxm-recall" not in json.dumps(steps[0].body)  # it arrives escaped, as documented
            print(f"LATENCY qwen session 2 (recall on every step): wall_s={seen.second.wall:.2f}")
            _garbage_free(fake)
    finally:
        box.stop_daemon()
    box.uninstall()
    _only_qwen_changed_it(box)


def test_qwen_turn_completes_with_paxm_uninstalled_underneath_it(box: HarnessBox) -> None:
    box.setup()
    try:
        with box.fake(hang=4.0) as fake:

            def remove() -> None:  # paxm goes away under the running turn: hooks and config, then the config dir
                box.uninstall()
                box.config.rename(box.config.with_suffix(".gone"))

            ok(paxm_removed_midway(box, fake, remove))
            _garbage_free(fake)
    finally:
        box.stop_daemon()
    _only_qwen_changed_it(box)


def test_decision_captured_by_claude_code_is_recalled_by_qwen(
    qwen: tuple[Harness, Installed], claude: tuple[Harness, Installed], box: HarnessBox
) -> None:
    first = HarnessBox(box.root, *claude)
    first.setup(QWEN.agent)
    first.generous_recall_budget()
    box.generous_recall_budget()
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        run, inputs = cross_harness(first, box, marker=marker)
        assert all(box.recalled(text, marker) for text in inputs), [t[-2000:] for t in inputs]
        print(f"LATENCY qwen turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
