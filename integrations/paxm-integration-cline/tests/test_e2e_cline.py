"""End to end with the real Cline CLI (offline, fake Chat Completions server on 127.0.0.1).

Every run uses ``CLINE_SESSION_BACKEND_MODE=local``; the autouse finalizer in ``conftest.py``
fails a test that leaves a cline process (Cline's hub daemon) behind.  Wall times print as
``LATENCY`` lines (run with ``-s``).
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from cline_harness import USER_PLUGIN, ClineRun, ClineSandbox, install_cline
from paxm_contracttest.fake_models.chat_tools import FakeChat, Recorded

from paxm_contracttest.harness import npm_cache_dir, require
from paxm_contracttest.model_input import PASSIVE_OPEN, assert_no_hook_noise, recalled

pytestmark = [pytest.mark.harness, pytest.mark.slow]

CLAUDE_TESTS = Path(__file__).resolve().parents[2] / "paxm-integration-claude-code" / "tests"


def _garbage_free(request: Recorded) -> None:
    assert_no_hook_noise(request.user_text())


def _recall_in(request: Recorded, marker: str) -> bool:
    return recalled(request.user_text(), marker)


@pytest.fixture(scope="session")
def cline() -> Path:
    try:
        return install_cline()
    except RuntimeError as exc:
        require(f"Cline {exc}")


@pytest.fixture
def box(cline: Path, tmp_path: Path) -> ClineSandbox:
    sandbox = ClineSandbox(tmp_path / "box", cline)
    sandbox.write_user_plugin()
    return sandbox


def _ok(run: ClineRun) -> None:
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.reply, run.stdout[-4000:]


def _only_the_users_plugin(box: ClineSandbox) -> None:
    assert sorted(p.name for p in box.plugins.iterdir()) == ["mine.js"]
    assert (box.plugins / "mine.js").read_text() == USER_PLUGIN


def test_cline_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(
    box: ClineSandbox, tmp_path: Path
) -> None:
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    with FakeChat(tmp_path / "requests.jsonl", marker=marker) as fake:
        box.authenticate(fake)
        box.setup_cline()
        box.generous_budget()
        box.warm_daemon()
        try:
            first = box.cline(f"RUN_TOOL: Decision: release branches are named {marker}-<version>.")
            _ok(first)
            assert any(s.has_tool_result for s in fake.agent_steps())  # the run used the shell tool
            print(f"LATENCY cline session 1 (tool call, capture): wall_s={first.wall:.2f}")
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            stored = [t for t in box.memory_texts() if marker in t]
            assert any("Noted, I will remember that." in t for t in stored), box.memory_texts()
            assert any("TOOL_RAN_OK" in t for t in box.memory_texts())  # afterTool captured the result

            seen = len(fake.agent_steps())
            second = box.cline("RUN_TOOL: which naming scheme did we decide on for release branches?")
            _ok(second)
            steps = fake.agent_steps()[seen:]
            assert len(steps) >= 2 and steps[-1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # including the request after the tool call
                assert _recall_in(step, marker), step.user_text()[-3000:]
                assert step.user_text().count(PASSIVE_OPEN) == 1
            assert second.reply.endswith("[marker-seen]")
            print(f"LATENCY cline session 2 (recall on every step): wall_s={second.wall:.2f}")
            for request in fake.completions():
                _garbage_free(request)
        finally:
            box.stop_daemon()
    box.uninstall_cline()
    _only_the_users_plugin(box)


def test_cline_run_completes_with_paxm_uninstalled_underneath_it(box: ClineSandbox, tmp_path: Path) -> None:
    with FakeChat(tmp_path / "requests.jsonl", hang=4.0) as fake:
        box.authenticate(fake)
        box.setup_cline()
        try:
            with subprocess.Popen(
                box.argv("Hello there"),
                cwd=box.workspace,
                env=box.cline_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
            ) as process:
                deadline = time.monotonic() + 120
                while not fake.completions() and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert fake.completions(), "Cline sent no model request"
                # paxm goes away under the running turn: the plugin and config, then the config dir
                box.uninstall_cline()
                box.config.rename(box.config.with_suffix(".gone"))
                out, err = process.communicate(timeout=180)
            run = ClineRun(process.returncode, out, err, 0.0)
            _ok(run)
            for request in fake.completions():
                _garbage_free(request)
        finally:
            box.stop_daemon()
    _only_the_users_plugin(box)


def test_decision_captured_by_claude_code_is_recalled_by_cline(cline: Path, tmp_path: Path) -> None:
    if str(CLAUDE_TESTS) not in sys.path:
        sys.path.insert(0, str(CLAUDE_TESTS))
    from claude_harness import install_claude

    from paxm_contracttest.fake_models.anthropic import FakeAnthropic
    from paxm_contracttest.harness.npm import require_npm

    claude = install_claude(require_npm(pytest.skip), npm_cache_dir())
    box = ClineSandbox(tmp_path / "box", cline, claude=claude)
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    with FakeChat(tmp_path / "openai.jsonl", marker=marker) as fake:
        box.authenticate(fake)
        box.setup_cline("claude")
        box.generous_recall_budget()
        box.generous_budget()
        box.warm_daemon()
        try:
            with FakeAnthropic(tmp_path / "anthropic.jsonl", marker=marker) as anthropic:
                first = box.claude(anthropic, f"Decision: the metrics dashboard lives at {marker}.example from now on.")
                assert first.returncode == 0, first.stderr
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            assert any(marker in t for t in box.memory_texts()), box.memory_texts()
            run = box.cline("Where does the metrics dashboard live?")
            _ok(run)
            steps = fake.agent_steps()
            assert steps and all(_recall_in(s, marker) for s in steps), [s.user_text()[-2000:] for s in steps]
            assert run.reply.endswith("[marker-seen]")
            print(f"LATENCY cline run recalling a Claude Code decision: wall_s={run.wall:.2f}")
        finally:
            box.stop_daemon()
