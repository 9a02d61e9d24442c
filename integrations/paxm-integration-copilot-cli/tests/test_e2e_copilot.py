"""End to end with the real GitHub Copilot CLI (offline, fake Chat Completions server on 127.0.0.1).

Wall times print as ``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from copilot_harness import CopilotRun, CopilotSandbox, install_copilot
from disposable_python import DisposablePython

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI, Recorded
from paxm_contracttest.harness.npm import npm_cache_dir, require_npm
from paxm_contracttest.model_input import PASSIVE_OPEN, assert_no_hook_noise, recalled

pytestmark = [pytest.mark.harness, pytest.mark.slow]

#: Copilot passes additionalContext through as is: the envelope reaches the model unescaped


def _garbage_free(request: Recorded) -> None:
    assert_no_hook_noise(request.user_text(), extra=("No such file",))


def _recall_in(request: Recorded, marker: str) -> bool:
    return recalled(request.user_text(), marker)


@pytest.fixture(scope="session")
def copilot() -> Path:
    return install_copilot(require_npm(pytest.skip, "the real Copilot CLI tests"))


@pytest.fixture
def box(copilot: Path, tmp_path: Path) -> CopilotSandbox:
    return CopilotSandbox(tmp_path / "box", copilot)


def _ok(run: CopilotRun) -> None:
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.reply, run.stdout[-4000:]


def _user_files_unchanged(box: CopilotSandbox, files: dict[str, str]) -> None:
    for name, text in files.items():
        assert (box.copilot_home / name).read_text() == text, name


def test_copilot_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(
    box: CopilotSandbox, tmp_path: Path
) -> None:
    files = box.write_user_hooks()
    box.paxm("setup", "--yes", "--agent", "copilot", "--provider", "sqlite")
    box.generous_agent_budget("copilot-cli")
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl", marker=marker) as fake:
            first = box.copilot(fake, f"RUN_TOOL: Decision: release branches are named {marker}-<version>.")
            _ok(first)
            assert any(s.has_tool_result for s in fake.agent_steps())  # the turn ran the shell tool
            print(f"LATENCY copilot session 1 (tool call, capture): wall_s={first.wall:.2f}")
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            stored = [t for t in box.memory_texts() if marker in t]
            # one episode: the prompt (userPromptSubmitted) and the reply read from events.jsonl (agentStop)
            assert any(
                "GitHub Copilot CLI user input:" in t and "assistant response:\nNoted, I will remember that." in t
                for t in stored
            ), box.memory_texts()
            assert not any("TOOL_RAN_OK" in t for t in box.memory_texts())

            seen = len(fake.agent_steps())
            second = box.copilot(fake, "RUN_TOOL: which naming scheme did we decide on for release branches?")
            _ok(second)
            steps = fake.agent_steps()[seen:]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert _recall_in(step, marker), step.user_text()[-3000:]
                assert step.user_text().count(PASSIVE_OPEN) == 1
            assert second.reply.endswith("[marker-seen]")
            print(f"LATENCY copilot session 2 (recall on every step): wall_s={second.wall:.2f}")
            box.paxm("__hook-control", "--flush")
            replies = [t for t in box.memory_texts() if "which naming scheme" in t]
            assert any("[marker-seen]" in t for t in replies), replies  # the warm daemon's read of the reply too
            for request in fake.completions():
                _garbage_free(request)
    finally:
        box.stop_daemon()
    box.paxm("uninstall", "--agent", "copilot", "--yes")
    assert not box.hooks_file.exists()
    _user_files_unchanged(box, files)


def test_copilot_turns_complete_with_paxm_uninstalled_underneath_them(box: CopilotSandbox, tmp_path: Path) -> None:
    python = DisposablePython(tmp_path / "paxm-venv")
    done = python.paxm(box.config, "setup", "--yes", "--agent", "copilot", "--provider", "sqlite", env=box.env())
    assert done.returncode == 0, done.stderr
    assert str(python.python) in box.hooks_file.read_text()  # the hooks run the disposable interpreter
    # start the hook daemon the way Copilot would (a cold one is not waited for)
    start = json.loads(box.hooks_file.read_text())["hooks"]["sessionStart"][0]["bash"]
    subprocess.run(start, shell=True, input=b"{}", env=box.env(), capture_output=True, timeout=60, check=True)
    box.wait_for_daemon()
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl", hang=4.0) as fake:
            with subprocess.Popen(
                box.copilot_argv("Hello there"),
                cwd=box.workspace,
                env=box.copilot_env(fake),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
            ) as process:
                deadline = time.monotonic() + 120
                while not fake.completions() and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert fake.completions(), "Copilot sent no model request"
                assert "<paxm-" in fake.completions()[0].user_text()  # the hooks ran with that interpreter
                # paxm goes away under the running turn: its interpreter, then its config
                python.remove()
                box.config.rename(box.config.with_suffix(".gone"))
                out, err = process.communicate(timeout=180)
            _ok(CopilotRun(process.returncode, out, err, 0.0))
            # the next turn starts with stale hooks whose interpreter is gone: it runs as without paxm
            fake.hang = 0.0
            seen = len(fake.completions())
            after = box.copilot(fake, "Hello again")
            _ok(after)
            assert fake.completions()[seen:]
            for request in fake.completions():
                _garbage_free(request)
            assert "<paxm-" not in fake.completions()[-1].user_text()
    finally:
        box.stop_daemon()
    assert box.hooks_file.exists()  # the stale hooks were there all along


def test_decision_captured_by_claude_code_is_recalled_by_copilot(copilot: Path, tmp_path: Path) -> None:
    from claude_harness import install_claude

    from paxm_contracttest.fake_models.anthropic import FakeAnthropic

    claude = install_claude(require_npm(pytest.skip), npm_cache_dir())
    box = CopilotSandbox(tmp_path / "box", copilot, claude=claude)
    box.paxm("setup", "--yes", "--agent", "claude", "--agent", "copilot", "--provider", "sqlite")
    box.generous_recall_budget()
    box.generous_agent_budget("copilot-cli")
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        with FakeAnthropic(tmp_path / "anthropic.jsonl", marker=marker) as anthropic:
            first = box.claude(anthropic, f"Decision: the metrics dashboard lives at {marker}.example from now on.")
            assert first.returncode == 0, first.stderr
        box.wait_for_daemon()
        box.paxm("__hook-control", "--flush")
        assert any(marker in t for t in box.memory_texts()), box.memory_texts()
        with FakeOpenAI(tmp_path / "openai.jsonl", marker=marker) as fake:
            run = box.copilot(fake, "Where does the metrics dashboard live?")
            _ok(run)
            steps = fake.agent_steps()
            assert steps and all(_recall_in(s, marker) for s in steps), [s.user_text()[-2000:] for s in steps]
            assert run.reply.endswith("[marker-seen]")
            print(f"LATENCY copilot turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
