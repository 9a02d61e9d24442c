"""End to end with the real Kimi Code CLI (offline, fake Chat Completions server on 127.0.0.1).

Runs on the shared real-binary kit (``paxm_contracttest.harness.kit``, the Kimi Code
description in ``harnesses``).  Wall times print as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.chat_tools import FakeChat, Recorded
from paxm_contracttest.harness.harnesses import CLAUDE, KIMI, KIMI_CONFIG
from paxm_contracttest.harness.kit import (
    Harness,
    HarnessBox,
    Installed,
    Turn,
    capture_then_recall,
    cross_harness,
    installed_fixture,
    paxm_removed_midway,
)
from paxm_contracttest.model_input import PASSIVE_OPEN, assert_no_hook_noise

pytestmark = [pytest.mark.harness, pytest.mark.slow]

kimi = installed_fixture(KIMI)
claude = installed_fixture(CLAUDE)


def _garbage_free(fake: FakeChat) -> None:
    for request in fake.completions():
        assert_no_hook_noise(request.user_text())


def _ok(run: Turn) -> None:
    assert run.returncode == 0, run.stderr[-4000:]


@pytest.fixture
def box(kimi: tuple[Harness, Installed], tmp_path: Path) -> HarnessBox:
    return HarnessBox(tmp_path / "box", *kimi)


def _config(box: HarnessBox) -> Path:
    return box.home / ".kimi-code" / "config.toml"


def test_kimi_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(box: HarnessBox) -> None:
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    with box.fake(marker=marker) as fake:
        box.point_at(fake.url)
        original = _config(box).read_text()
        assert original == KIMI_CONFIG.replace("{url}", fake.url)
        box.setup()
        box.generous_recall_budget()
        try:
            seen = capture_then_recall(  # the reply is read from the session's wire.jsonl
                box,
                fake,
                marker=marker,
                decision="RUN_TOOL: Decision: release branches are named {marker}-<version>.",
                question="RUN_TOOL: which naming scheme did we decide on for release branches?",
                check=_ok,
            )
            assert any(s.has_tool_result for s in fake.agent_steps()[: len(seen.first_inputs)])  # the shell tool ran
            print(f"LATENCY kimi session 1 (tool call, capture): wall_s={seen.first.wall:.2f}")
            steps: list[Recorded] = fake.agent_steps()[len(seen.first_inputs) :]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert box.recalled(step.user_text(), marker), step.user_text()[-3000:]
                assert step.user_text().count(PASSIVE_OPEN) == 1
            assert "[marker-seen]" in seen.second.stdout
            print(f"LATENCY kimi session 2 (recall on every step): wall_s={seen.second.wall:.2f}")
            _garbage_free(fake)
        finally:
            box.stop_daemon()
    box.uninstall()
    assert _config(box).read_text() == original


def test_kimi_turn_completes_with_paxm_uninstalled_underneath_it(box: HarnessBox) -> None:
    with box.fake(hang=4.0) as fake:
        box.point_at(fake.url)
        original = _config(box).read_text()
        box.setup()
        try:

            def remove() -> None:  # paxm goes away under the running turn: hooks and config, then the config dir
                box.uninstall()
                box.config.rename(box.config.with_suffix(".gone"))

            run = paxm_removed_midway(box, fake, remove)
            assert run.returncode == 0, run.stderr[-4000:]
            assert "Noted, I will remember that." in run.stdout
            _garbage_free(fake)
        finally:
            box.stop_daemon()
    assert _config(box).read_text() == original


def test_decision_captured_by_claude_code_is_recalled_by_kimi(
    claude: tuple[Harness, Installed], box: HarnessBox
) -> None:
    first = HarnessBox(box.root, *claude)
    first.setup(KIMI.agent)
    first.generous_recall_budget()
    box.generous_recall_budget()
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        run, inputs = cross_harness(first, box, marker=marker, check=_ok)
        assert all(box.recalled(text, marker) for text in inputs), [t[-2000:] for t in inputs]
        assert "[marker-seen]" in run.stdout
        print(f"LATENCY kimi turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
