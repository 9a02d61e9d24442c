"""End to end with the real Gemini CLI (offline, the fake Gemini API on 127.0.0.1).

Wall times print as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from disposable_python import DisposablePython
from paxm_contracttest.fake_models.gemini import FakeGemini, GeminiRequest
from gemini_harness import USER_SETTINGS, GeminiRun, GeminiSandbox, install_gemini

from paxm_contracttest.harness.npm import npm_cache_dir, require_npm
from paxm_contracttest.model_input import assert_no_hook_noise, recalled

pytestmark = [pytest.mark.harness, pytest.mark.slow]

#: Gemini escapes ``<`` and ``>`` of injected context: this is how the real envelope reaches the model
ENVELOPE = '&lt;paxm-recall version="1" mode="passive"&gt;'
CLOSE = "&lt;/paxm-recall&gt;"


def _garbage_free(request: GeminiRequest) -> None:
    assert_no_hook_noise(request.user_text(), extra=("No such file",), open_tag="&lt;paxm-recall", close_tag=CLOSE)


def _recall_in(request: GeminiRequest, marker: str) -> bool:
    return recalled(request.user_text(), marker, open_tag=ENVELOPE, close_tag=CLOSE)


@pytest.fixture(scope="session")
def gemini() -> Path:
    return install_gemini(require_npm(pytest.skip, "the real Gemini CLI tests"))


@pytest.fixture
def box(gemini: Path, tmp_path: Path) -> GeminiSandbox:
    sandbox = GeminiSandbox(tmp_path / "box", gemini)
    sandbox.write_user_settings()
    return sandbox


def _ok(run: GeminiRun) -> None:
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.reply, run.stdout[-4000:]


def _only_paxm_left(box: GeminiSandbox) -> None:
    """After uninstall the settings are the user's again."""
    assert json.loads(box.gemini_settings.read_text()) == USER_SETTINGS


def test_gemini_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(
    box: GeminiSandbox, tmp_path: Path
) -> None:
    box.paxm("setup", "--yes", "--agent", "gemini", "--provider", "sqlite")
    box.generous_agent_budget("gemini-cli")
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    try:
        with FakeGemini(tmp_path / "requests.jsonl", marker=marker) as fake:
            first = box.gemini(fake, f"RUN_TOOL: Decision: release branches are named {marker}-<version>.")
            _ok(first)
            assert any(s.has_tool_result for s in fake.agent_steps())  # the turn ran the shell tool
            print(f"LATENCY gemini session 1 (tool call, capture): wall_s={first.wall:.2f}")
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            stored = [t for t in box.memory_texts() if marker in t]
            # one episode: the prompt (BeforeAgent) and the reply (AfterAgent's prompt_response)
            assert any("Gemini CLI user input:" in t and "Noted, I will remember that." in t for t in stored), stored
            assert not any("TOOL_RAN_OK" in t for t in box.memory_texts())

            seen = len(fake.agent_steps())
            second = box.gemini(fake, "RUN_TOOL: which naming scheme did we decide on for release branches?")
            _ok(second)
            steps = fake.agent_steps()[seen:]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert _recall_in(step, marker), step.user_text()[-3000:]
                assert step.user_text().count(ENVELOPE) == 1
            assert "<paxm-recall" not in steps[0].text  # it arrives escaped, as documented
            assert "<hook_context>" in steps[0].user_text()  # Gemini's own wrapper around hook context
            assert second.reply.endswith("[marker-seen]")
            print(f"LATENCY gemini session 2 (recall on every step): wall_s={second.wall:.2f}")
            for request in fake.generations():
                _garbage_free(request)
    finally:
        box.stop_daemon()
    box.paxm("uninstall", "--agent", "gemini", "--yes")
    _only_paxm_left(box)


def test_gemini_turns_complete_with_paxm_uninstalled_underneath_them(box: GeminiSandbox, tmp_path: Path) -> None:
    python = DisposablePython(tmp_path / "paxm-venv")
    done = python.paxm(box.config, "setup", "--yes", "--agent", "gemini", "--provider", "sqlite", env=box.env())
    assert done.returncode == 0, done.stderr
    assert str(python.python) in box.gemini_settings.read_text()  # the hooks run the disposable interpreter
    # start the hook daemon the way Gemini would (a cold one is not waited for: the turn goes on without paxm)
    start = json.loads(box.gemini_settings.read_text())["hooks"]["SessionStart"][-1]["hooks"][0]["command"]
    subprocess.run(start, shell=True, input=b"{}", env=box.env(), capture_output=True, timeout=60, check=True)
    box.wait_for_daemon()
    try:
        with FakeGemini(tmp_path / "requests.jsonl", hang=4.0) as fake:
            with subprocess.Popen(
                box.gemini_argv("Hello there"),
                cwd=box.workspace,
                env=box.gemini_env(fake),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
            ) as process:
                deadline = time.monotonic() + 120
                while not fake.generations() and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert fake.generations(), "Gemini sent no model request"
                # the hooks ran with the disposable interpreter: SessionStart's paxm context arrived
                assert "&lt;paxm-" in fake.generations()[0].user_text(), fake.generations()[0].user_text()[-2000:]
                # paxm goes away under the running turn: its interpreter, then its config
                python.remove()
                box.config.rename(box.config.with_suffix(".gone"))
                out, err = process.communicate(timeout=180)
            _ok(GeminiRun(process.returncode, out, err, 0.0))
            # the next turn starts with stale hooks whose interpreter is gone: it runs as without paxm
            fake.hang = 0.0
            seen = len(fake.generations())
            after = box.gemini(fake, "Hello again")
            _ok(after)
            assert fake.generations()[seen:]
            for request in fake.generations():
                _garbage_free(request)
            assert ENVELOPE not in fake.generations()[-1].user_text()
    finally:
        box.stop_daemon()
    assert "paxm-BeforeAgent" in box.gemini_settings.read_text()  # the stale hooks were there all along


def test_decision_captured_by_claude_code_is_recalled_by_gemini(gemini: Path, tmp_path: Path) -> None:
    from claude_harness import install_claude

    from paxm_contracttest.fake_models.anthropic import FakeAnthropic

    claude = install_claude(require_npm(pytest.skip), npm_cache_dir())
    box = GeminiSandbox(tmp_path / "box", gemini, claude=claude)
    box.write_user_settings()
    box.paxm("setup", "--yes", "--agent", "claude", "--agent", "gemini", "--provider", "sqlite")
    box.generous_recall_budget()
    box.generous_agent_budget("gemini-cli")
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        with FakeAnthropic(tmp_path / "anthropic.jsonl", marker=marker) as anthropic:
            first = box.claude(anthropic, f"Decision: the metrics dashboard lives at {marker}.example from now on.")
            assert first.returncode == 0, first.stderr
        box.wait_for_daemon()
        box.paxm("__hook-control", "--flush")
        assert any(marker in t for t in box.memory_texts()), box.memory_texts()
        with FakeGemini(tmp_path / "gemini.jsonl", marker=marker) as fake:
            run = box.gemini(fake, "Where does the metrics dashboard live?")
            _ok(run)
            steps = fake.agent_steps()
            assert steps and all(_recall_in(s, marker) for s in steps), [s.user_text()[-2000:] for s in steps]
            assert run.reply.endswith("[marker-seen]")
            print(f"LATENCY gemini turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
