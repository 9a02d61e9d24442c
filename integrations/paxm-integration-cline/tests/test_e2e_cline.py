"""End to end with the real Cline CLI (offline, fake Chat Completions server on 127.0.0.1).

Runs on the shared real-binary kit (``paxm_contracttest.harness.kit``, the Cline description in
``harnesses``).  Every run uses ``CLINE_SESSION_BACKEND_MODE=local``; the autouse finalizer in
``conftest.py`` fails a test that leaves a cline process (Cline's hub daemon) behind.  Wall
times print as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.chat_tools import FakeChat
from paxm_contracttest.harness.harnesses import CLAUDE, CLINE, CLINE_USER_PLUGIN
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

cline = installed_fixture(CLINE)
claude = installed_fixture(CLAUDE)


def _garbage_free(fake: FakeChat) -> None:
    for request in fake.completions():
        assert_no_hook_noise(request.user_text())


@pytest.fixture
def box(cline: tuple[Harness, Installed], tmp_path: Path) -> HarnessBox:
    return HarnessBox(tmp_path / "box", *cline)


def _plugins(box: HarnessBox) -> Path:
    return box.home / ".cline" / "plugins"


def _only_the_users_plugin(box: HarnessBox) -> None:
    assert sorted(p.name for p in _plugins(box).iterdir()) == ["mine.js"]
    assert (_plugins(box) / "mine.js").read_text() == CLINE_USER_PLUGIN


def _warm_daemon(box: HarnessBox) -> None:
    """Start paxm's hook daemon before the first run (Cline allows a plugin hook only 3 s)."""
    from paxm_integration_cline.plugin import embedded_settings

    settings = embedded_settings((_plugins(box) / "paxm.js").read_text()) or {}
    payload = {"hook_event_name": "session_start", "session_id": "warm-up", "cwd": str(box.workspace)}
    argv = settings["commands"]["session_start"]
    subprocess.run(argv, input=json.dumps(payload), env=box.env(), capture_output=True, text=True, timeout=60)
    box.wait_for_daemon()


def test_cline_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(box: HarnessBox) -> None:
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    with box.fake(marker=marker) as fake:
        box.point_at(fake.url)
        box.setup()
        box.generous_recall_budget("1s")
        _warm_daemon(box)
        try:
            seen = capture_then_recall(
                box,
                fake,
                marker=marker,
                decision="RUN_TOOL: Decision: release branches are named {marker}-<version>.",
                question="RUN_TOOL: which naming scheme did we decide on for release branches?",
            )
            assert any(s.has_tool_result for s in fake.agent_steps()[: len(seen.first_inputs)])  # the shell tool ran
            print(f"LATENCY cline session 1 (tool call, capture): wall_s={seen.first.wall:.2f}")
            assert any("TOOL_RAN_OK" in t for t in box.memory_texts())  # afterTool captured the result
            steps = fake.agent_steps()[len(seen.first_inputs) :]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert box.recalled(step.user_text(), marker), step.user_text()[-3000:]
                assert step.user_text().count(PASSIVE_OPEN) == 1
            print(f"LATENCY cline session 2 (recall on every step): wall_s={seen.second.wall:.2f}")
            _garbage_free(fake)
        finally:
            box.stop_daemon()
    box.uninstall()
    _only_the_users_plugin(box)


def test_cline_run_completes_with_paxm_uninstalled_underneath_it(box: HarnessBox) -> None:
    with box.fake(hang=4.0) as fake:
        box.point_at(fake.url)
        box.setup()
        try:

            def remove() -> None:  # paxm goes away under the running turn: the plugin and config, then the config dir
                box.uninstall()
                box.config.rename(box.config.with_suffix(".gone"))

            ok(paxm_removed_midway(box, fake, remove))
            _garbage_free(fake)
        finally:
            box.stop_daemon()
    _only_the_users_plugin(box)


def test_decision_captured_by_claude_code_is_recalled_by_cline(
    claude: tuple[Harness, Installed], box: HarnessBox
) -> None:
    first = HarnessBox(box.root, *claude)
    box.setup("claude")
    first.generous_recall_budget()
    box.generous_recall_budget("1s")
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        _warm_daemon(box)
        run, inputs = cross_harness(first, box, marker=marker)
        assert all(box.recalled(text, marker) for text in inputs), [t[-2000:] for t in inputs]
        print(f"LATENCY cline run recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
