"""End to end with the real OpenCode and Kilo Code binaries (offline, fake Chat Completions server on 127.0.0.1).

Runs on the shared real-binary kit (``paxm_contracttest.harness.kit``, the OpenCode and Kilo
Code descriptions in ``harnesses``).  Kilo is a fork of OpenCode that runs the same plugin from
its own config dir, so the shared flows run for both; the daemon-down, hanging-provider and
broken-config tests run on OpenCode, and Kilo's uninstalled-underneath-a-turn test is in
``contracttest/tests/test_e2e_harnesses.py``.  Wall times are printed as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.chat_completions import Recorded
from paxm_contracttest.harness import kit
from paxm_contracttest.harness.harnesses import CLAUDE, KILO, OPENCODE
from paxm_contracttest.model_input import assert_no_hook_noise

pytestmark = [pytest.mark.harness, pytest.mark.slow]

ENVELOPE = '<paxm-recall version="1" mode="passive">'

both = kit.installed_fixture(OPENCODE, KILO)
opencode = kit.installed_fixture(OPENCODE)
claude = kit.installed_fixture(CLAUDE)


#: OpenCode's own error output, which must never reach the model
NOISE = ("Error:",)


def _garbage_free(request: Recorded, box: kit.HarnessBox) -> None:
    assert_no_hook_noise(request.user_text(), extra=NOISE if box.harness is OPENCODE else ())


@pytest.fixture
def box(both: tuple[kit.Harness, kit.Installed], tmp_path: Path) -> kit.HarnessBox:
    """OpenCode, then Kilo Code."""
    return kit.HarnessBox(tmp_path / "box", *both)


@pytest.fixture
def ocbox(opencode: tuple[kit.Harness, kit.Installed], tmp_path: Path) -> kit.HarnessBox:
    """OpenCode only."""
    return kit.HarnessBox(tmp_path / "box", *opencode)


def _ok(run: kit.Turn) -> None:
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.reply, run.stdout[-4000:]
    # paxm's plugin must not make OpenCode wait for its config-dir dependency install
    assert "dependency install failed" not in run.stderr, run.stderr[-4000:]


def _plugin(box: kit.HarnessBox) -> Path:
    assert box.harness.native_config is not None
    return box.harness.native_config(box)


def _tree(box: kit.HarnessBox) -> list[Path]:
    config_dir = _plugin(box).parents[1]
    return sorted(p.relative_to(config_dir) for p in config_dir.rglob("*") if p.name != "node_modules")


def test_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(box: kit.HarnessBox) -> None:
    box.setup()
    if box.harness is KILO:
        assert _plugin(box).is_file() and (_plugin(box).stat().st_mode & 0o777) == 0o600
        assert "--agent kilo" in _plugin(box).read_text().splitlines()[0]
    box.generous_recall_budget()
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    name = box.harness.name
    try:
        with box.fake(marker=marker) as fake:
            box.point_at(fake.url)
            before = _tree(box)
            seen = kit.capture_then_recall(
                box,
                fake,
                marker=marker,
                decision="RUN_TOOL: Decision: release branches are named {marker}-<version> from now on.",
                question="RUN_TOOL: which naming scheme did we decide on for release branches?",
                check=_ok,
            )
            steps = fake.agent_steps()[: len(seen.first_inputs)]
            assert len(steps) == 2 and steps[1].has_tool_result  # the turn ran the tool
            print(f"LATENCY {name} session 1 (tool call, capture): wall_s={seen.first.wall:.2f}")
            stored = [t for t in box.memory_texts() if marker in t]
            assert not any("TOOL_RAN_OK" in t for t in stored)  # tool parts are not turn text
            steps = fake.agent_steps()[len(seen.first_inputs) :]
            assert len(steps) == 2 and steps[1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # every model request of the turn, including the one after the tool call
                assert box.recalled(step.user_text(), marker), step.user_text()[-3000:]
                assert step.user_text().count(ENVELOPE) == 1
            print(f"LATENCY {name} session 2 (recall on every step): wall_s={seen.second.wall:.2f}")
            for request in fake.completions():
                _garbage_free(request, box)
    finally:
        box.stop_daemon()
    box.uninstall()
    assert not _plugin(box).exists()
    after = _tree(box)
    assert set(before) - set(after) <= {Path("plugins") / "paxm.js"}
    if box.harness is OPENCODE:
        assert [p for p in after if p.parts[0] == "plugins"] == [Path("plugins")]
    else:
        assert (_plugin(box).parents[1] / "kilo.json").is_file()


def test_decision_captured_by_claude_code_is_recalled(
    claude: tuple[kit.Harness, kit.Installed], box: kit.HarnessBox
) -> None:
    first = kit.HarnessBox(box.root, *claude)
    first.setup(box.harness.agent)
    first.generous_recall_budget()
    box.generous_recall_budget()
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        run, inputs = kit.cross_harness(first, box, marker=marker, check=_ok)
        assert all(box.recalled(text, marker) for text in inputs), [t[-2000:] for t in inputs]
        print(f"LATENCY {box.harness.name} turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()


FAILING = [kit.daemon_down_turn, kit.broken_config_turn, kit.hanging_provider_turn]


@pytest.mark.parametrize("flow", FAILING, ids=["daemon_down", "broken_config", "hanging_provider"])
def test_turn_completes_clean_when_paxm_fails(ocbox: kit.HarnessBox, flow: Callable[..., kit.Turn]) -> None:
    """paxm's daemon down (nothing is lost: it drains the turn on start), its config broken, or a
    memory provider that never answers (the turn costs at most the hook client's ceiling)."""
    ocbox.setup()
    run = flow(ocbox, check=_ok, noise=NOISE)
    print(f"LATENCY opencode {flow.__name__}: wall_s={run.wall:.2f}")


def test_paxm_uninstalled_underneath_a_running_turn(ocbox: kit.HarnessBox, tmp_path: Path) -> None:
    ocbox.setup()
    kit.generated_file_outlives_paxm(ocbox, tmp_path, hang=4.0, check=_ok, noise=NOISE)
