"""End to end with the real Kimi Code CLI (offline, fake Chat Completions server on 127.0.0.1).

Wall times print as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from paxm_contracttest.fake_models.chat_tools import FakeChat, Recorded
from kimi_harness import KimiRun, KimiSandbox, install_kimi

from paxm_contracttest.harness import npm_cache_dir, require
from paxm_contracttest.model_input import PASSIVE_OPEN, assert_no_hook_noise, recalled

pytestmark = [pytest.mark.harness, pytest.mark.slow]

CLAUDE_TESTS = Path(__file__).resolve().parents[2] / "paxm-integration-claude-code" / "tests"


def _garbage_free(request: Recorded) -> None:
    assert_no_hook_noise(_all_text(request))


def _recall_in(request: Recorded, marker: str) -> bool:
    return recalled(_all_text(request), marker)


@pytest.fixture(scope="session")
def kimi() -> tuple[Path, Path]:
    try:
        return install_kimi()
    except RuntimeError as exc:
        require(f"Kimi Code {exc}")


@pytest.fixture
def box(kimi: tuple[Path, Path], tmp_path: Path) -> KimiSandbox:
    return KimiSandbox(tmp_path / "box", *kimi)


def _ok(run: KimiRun) -> None:
    assert run.returncode == 0, run.stderr[-4000:]


def _all_text(request: Recorded) -> str:
    return request.user_text()


def test_kimi_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(
    box: KimiSandbox, tmp_path: Path
) -> None:
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    with FakeChat(tmp_path / "requests.jsonl", marker=marker) as fake:
        original = box.write_user_config(fake)
        box.paxm("setup", "--yes", "--agent", "kimi-code", "--provider", "sqlite")
        box.generous_budget()
        try:
            first = box.kimi(f"RUN_TOOL: Decision: release branches are named {marker}-<version>.")
            _ok(first)
            assert any(s.has_tool_result for s in fake.agent_steps())  # the turn ran the shell tool
            print(f"LATENCY kimi session 1 (tool call, capture): wall_s={first.wall:.2f}")
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            stored = [t for t in box.memory_texts() if marker in t]
            assert any("Noted, I will remember that." in t for t in stored), box.memory_texts()  # from wire.jsonl

            seen = len(fake.agent_steps())
            second = box.kimi("RUN_TOOL: which naming scheme did we decide on for release branches?")
            _ok(second)
            steps = fake.agent_steps()[seen:]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert _recall_in(step, marker), step.user_text()[-3000:]
                assert step.user_text().count(PASSIVE_OPEN) == 1
            assert "[marker-seen]" in second.stdout
            print(f"LATENCY kimi session 2 (recall on every step): wall_s={second.wall:.2f}")
            for request in fake.completions():
                _garbage_free(request)
        finally:
            box.stop_daemon()
    box.paxm("uninstall", "--agent", "kimi-code", "--yes")
    assert box.kimi_config.read_text() == original


def test_kimi_turn_completes_with_paxm_uninstalled_underneath_it(box: KimiSandbox, tmp_path: Path) -> None:
    with FakeChat(tmp_path / "requests.jsonl", hang=4.0) as fake:
        original = box.write_user_config(fake)
        box.paxm("setup", "--yes", "--agent", "kimi-code", "--provider", "sqlite")
        try:
            with subprocess.Popen(
                box.argv("Hello there"),
                cwd=box.workspace,
                env=box.kimi_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
            ) as process:
                deadline = time.monotonic() + 120
                while not fake.completions() and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert fake.completions(), "Kimi sent no model request"
                # paxm goes away under the running turn: hooks and config, then the config dir
                box.paxm("uninstall", "--agent", "kimi-code", "--yes")
                box.config.rename(box.config.with_suffix(".gone"))
                out, err = process.communicate(timeout=180)
            assert process.returncode == 0, err[-4000:]
            assert "Noted, I will remember that." in out
            for request in fake.completions():
                _garbage_free(request)
        finally:
            box.stop_daemon()
    assert box.kimi_config.read_text() == original


def test_decision_captured_by_claude_code_is_recalled_by_kimi(kimi: tuple[Path, Path], tmp_path: Path) -> None:
    if str(CLAUDE_TESTS) not in sys.path:
        sys.path.insert(0, str(CLAUDE_TESTS))
    from claude_harness import install_claude

    from paxm_contracttest.fake_models.anthropic import FakeAnthropic
    from paxm_contracttest.harness.npm import require_npm

    claude = install_claude(require_npm(pytest.skip), npm_cache_dir())
    box = KimiSandbox(tmp_path / "box", *kimi, claude=claude)
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    with FakeChat(tmp_path / "openai.jsonl", marker=marker) as fake:
        box.write_user_config(fake)
        box.paxm("setup", "--yes", "--agent", "claude", "--agent", "kimi-code", "--provider", "sqlite")
        box.generous_recall_budget()
        box.generous_budget()
        try:
            with FakeAnthropic(tmp_path / "anthropic.jsonl", marker=marker) as anthropic:
                first = box.claude(anthropic, f"Decision: the metrics dashboard lives at {marker}.example from now on.")
                assert first.returncode == 0, first.stderr
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            assert any(marker in t for t in box.memory_texts()), box.memory_texts()
            run = box.kimi("Where does the metrics dashboard live?")
            _ok(run)
            steps = fake.agent_steps()
            assert steps and all(_recall_in(s, marker) for s in steps), [s.user_text()[-2000:] for s in steps]
            assert "[marker-seen]" in run.stdout
            print(f"LATENCY kimi turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
        finally:
            box.stop_daemon()
