"""End to end with the real Qwen Code CLI (offline, fake Chat Completions server on 127.0.0.1).

Wall times print as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from qwen_harness import USER_SETTINGS, QwenRun, QwenSandbox, install_qwen

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI, Recorded
from paxm_contracttest.harness.npm import npm_cache_dir, require_npm
from paxm_contracttest.model_input import assert_no_hook_noise, recalled

pytestmark = [pytest.mark.harness, pytest.mark.slow]

#: Qwen HTML-escapes the injected context: this is how the real envelope reaches the model
ENVELOPE = '&lt;paxm-recall version="1" mode="passive"&gt;'
CLOSE = "&lt;/paxm-recall&gt;"
CLAUDE_TESTS = Path(__file__).resolve().parents[2] / "paxm-integration-claude-code" / "tests"


def _garbage_free(request: Recorded) -> None:
    assert_no_hook_noise(request.user_text(), open_tag="&lt;paxm-recall", close_tag=CLOSE)


def _recall_in(request: Recorded, marker: str) -> bool:
    return recalled(request.user_text(), marker, open_tag=ENVELOPE, close_tag=CLOSE)


@pytest.fixture(scope="session")
def qwen() -> Path:
    return install_qwen(require_npm(pytest.skip, "the real Qwen Code tests"))


@pytest.fixture
def box(qwen: Path, tmp_path: Path) -> QwenSandbox:
    sandbox = QwenSandbox(tmp_path / "box", qwen)
    sandbox.write_user_settings()
    return sandbox


def _ok(run: QwenRun) -> None:
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.reply, run.stdout[-4000:]


def _only_qwen_changed_it(box: QwenSandbox) -> None:
    """After uninstall the settings are the user's again, plus the ``$version`` Qwen itself adds."""
    data = json.loads(box.qwen_settings.read_text())
    data.pop("$version", None)
    assert data == USER_SETTINGS


def test_qwen_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(
    box: QwenSandbox, tmp_path: Path
) -> None:
    box.paxm("setup", "--yes", "--agent", "qwen-code", "--provider", "sqlite")
    box.generous_qwen_budget()
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl", marker=marker) as fake:
            first = box.qwen(fake, f"RUN_TOOL: Decision: release branches are named {marker}-<version>.")
            _ok(first)
            steps = fake.agent_steps()
            assert any(s.has_tool_result for s in steps)  # the turn ran the shell tool
            print(f"LATENCY qwen session 1 (tool call, capture): wall_s={first.wall:.2f}")
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            stored = [t for t in box.memory_texts() if marker in t]
            assert any("Noted, I will remember that." in t for t in stored), box.memory_texts()
            assert not any("TOOL_RAN_OK" in t for t in box.memory_texts())

            seen = len(fake.agent_steps())
            second = box.qwen(fake, "RUN_TOOL: which naming scheme did we decide on for release branches?")
            _ok(second)
            steps = fake.agent_steps()[seen:]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert _recall_in(step, marker), step.user_text()[-3000:]
                assert step.user_text().count(ENVELOPE) == 1
            assert "<paxm-recall" not in json.dumps(steps[0].body)  # it arrives escaped, as documented
            assert second.reply.endswith("[marker-seen]")
            print(f"LATENCY qwen session 2 (recall on every step): wall_s={second.wall:.2f}")
            for request in fake.completions():
                _garbage_free(request)
    finally:
        box.stop_daemon()
    box.paxm("uninstall", "--agent", "qwen", "--yes")
    _only_qwen_changed_it(box)


def test_qwen_turn_completes_with_paxm_uninstalled_underneath_it(box: QwenSandbox, tmp_path: Path) -> None:
    box.paxm("setup", "--yes", "--agent", "qwen", "--provider", "sqlite")
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl", hang=4.0) as fake:
            argv = [str(box.qwen_bin), "-p", "Hello there", "-o", "json"]
            with subprocess.Popen(
                argv,
                cwd=box.workspace,
                env=box.qwen_env(fake),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
            ) as process:
                deadline = time.monotonic() + 120
                while not fake.completions() and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert fake.completions(), "Qwen sent no model request"
                # paxm goes away under the running turn: hooks and config, then the config dir
                box.paxm("uninstall", "--agent", "qwen", "--yes")
                box.config.rename(box.config.with_suffix(".gone"))
                out, err = process.communicate(timeout=180)
            run = QwenRun(process.returncode, out, err, 0.0)
            _ok(run)
            for request in fake.completions():
                _garbage_free(request)
    finally:
        box.stop_daemon()
    _only_qwen_changed_it(box)


def test_decision_captured_by_claude_code_is_recalled_by_qwen(qwen: Path, tmp_path: Path) -> None:
    if str(CLAUDE_TESTS) not in sys.path:
        sys.path.insert(0, str(CLAUDE_TESTS))
    from claude_harness import install_claude

    from paxm_contracttest.fake_models.anthropic import FakeAnthropic

    claude = install_claude(require_npm(pytest.skip), npm_cache_dir())
    box = QwenSandbox(tmp_path / "box", qwen, claude=claude)
    box.write_user_settings()
    box.paxm("setup", "--yes", "--agent", "claude", "--agent", "qwen", "--provider", "sqlite")
    box.generous_recall_budget()
    box.generous_qwen_budget()
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        with FakeAnthropic(tmp_path / "anthropic.jsonl", marker=marker) as anthropic:
            first = box.claude(anthropic, f"Decision: the metrics dashboard lives at {marker}.example from now on.")
            assert first.returncode == 0, first.stderr
        box.wait_for_daemon()
        box.paxm("__hook-control", "--flush")
        assert any(marker in t for t in box.memory_texts()), box.memory_texts()
        with FakeOpenAI(tmp_path / "openai.jsonl", marker=marker) as fake:
            run = box.qwen(fake, "Where does the metrics dashboard live?")
            _ok(run)
            steps = fake.agent_steps()
            assert steps and all(_recall_in(s, marker) for s in steps), [s.user_text()[-2000:] for s in steps]
            assert run.reply.endswith("[marker-seen]")
            print(f"LATENCY qwen turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
