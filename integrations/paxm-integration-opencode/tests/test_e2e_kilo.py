"""End to end with the real Kilo Code CLI (offline, fake Chat Completions server on 127.0.0.1).

Kilo runs OpenCode's plugin API from its own config dir, so these tests drive the same plugin
through ``paxm setup --agent kilo``: a decision from one session reaches every model request of
the next (including the one after a tool call), a Claude Code decision reaches Kilo, and a turn
completes when paxm is uninstalled underneath it.  Wall times print as ``LATENCY`` lines (``-s``).
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kilo_harness import KiloSandbox, install_kilo, kilo_env
from opencode_harness import OpenCodeRun

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI, Recorded
from paxm_contracttest.harness.npm import npm_cache_dir, require_npm
from paxm_contracttest.model_input import PASSIVE_OPEN, assert_no_hook_noise, recalled

pytestmark = [pytest.mark.harness, pytest.mark.slow]

CLAUDE_TESTS = Path(__file__).resolve().parents[2] / "paxm-integration-claude-code" / "tests"


def _garbage_free(request: Recorded) -> None:
    assert_no_hook_noise(request.user_text())


def _recall_in(request: Recorded, marker: str) -> bool:
    return recalled(request.user_text(), marker)


@pytest.fixture(scope="session")
def kilo() -> tuple[Path, Path]:
    return install_kilo(require_npm(pytest.skip, "the real Kilo Code tests"))


@pytest.fixture
def box(kilo: tuple[Path, Path], tmp_path: Path) -> KiloSandbox:
    return KiloSandbox(tmp_path / "box", *kilo)


def _ok(run: OpenCodeRun) -> None:
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.reply, run.stdout[-4000:]
    assert "dependency install failed" not in run.stderr, run.stderr[-4000:]


def _tree(box: KiloSandbox) -> list[Path]:
    return sorted(p.relative_to(box.opencode_dir) for p in box.opencode_dir.rglob("*") if p.name != "node_modules")


def test_kilo_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(
    box: KiloSandbox, tmp_path: Path
) -> None:
    box.paxm("setup", "--yes", "--agent", "kilo", "--provider", "sqlite")
    assert box.plugin_file.is_file() and (box.plugin_file.stat().st_mode & 0o777) == 0o600
    assert "--agent kilo" in box.plugin_file.read_text().splitlines()[0]
    box.generous_opencode_budget()
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl", marker=marker) as fake:
            box.configure_opencode(fake.url)
            before = _tree(box)
            first = box.opencode(fake, f"RUN_TOOL: Decision: release branches are named {marker}-<version>.")
            _ok(first)
            steps = fake.agent_steps()
            assert len(steps) == 2 and steps[1].has_tool_result
            print(f"LATENCY kilo session 1 (tool call, capture): wall_s={first.wall:.2f}")

            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            stored = [t for t in box.memory_texts() if marker in t]
            assert any("Noted, I will remember that." in t for t in stored), box.memory_texts()
            assert not any("TOOL_RAN_OK" in t for t in stored)

            seen = len(fake.agent_steps())
            second = box.opencode(fake, "RUN_TOOL: which naming scheme did we decide on for release branches?")
            _ok(second)
            steps = fake.agent_steps()[seen:]
            assert len(steps) == 2 and steps[1].has_tool_result
            for step in steps:  # including the request after the tool call
                assert _recall_in(step, marker), step.user_text()[-3000:]
                assert step.user_text().count(PASSIVE_OPEN) == 1
            assert second.reply.endswith("[marker-seen]")
            print(f"LATENCY kilo session 2 (recall on every step): wall_s={second.wall:.2f}")
            for request in fake.completions():
                _garbage_free(request)
    finally:
        box.stop_daemon()
    box.paxm("uninstall", "--agent", "kilo", "--yes")
    assert not box.plugin_file.exists()
    after = _tree(box)
    assert set(before) - set(after) <= {Path("plugins") / "paxm.js"}
    assert (box.opencode_dir / "kilo.json").is_file()


def test_kilo_turn_completes_with_paxm_uninstalled_underneath_it(box: KiloSandbox, tmp_path: Path) -> None:
    box.paxm("setup", "--yes", "--agent", "kilo", "--provider", "sqlite")
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl", hang=4.0) as fake:
            box.configure_opencode(fake.url)
            argv = [str(box.opencode_bin), "run", "--format", "json", "Hello there"]
            with subprocess.Popen(
                argv,
                cwd=box.workspace,
                env=box.env(**kilo_env()),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
            ) as process:
                deadline = time.monotonic() + 150
                while not fake.completions() and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert fake.completions(), "Kilo sent no model request"
                box.paxm("uninstall", "--agent", "kilo", "--yes")
                assert not box.plugin_file.exists()
                # the paxm installation itself disappears too: the hooks still to come find nothing
                box.config.rename(box.config.with_suffix(".gone"))
                out, err = process.communicate(timeout=200)
            run = OpenCodeRun(process.returncode, out, err, 0.0)
            _ok(run)
            for request in fake.completions():
                _garbage_free(request)
    finally:
        box.stop_daemon()


def test_decision_captured_by_claude_code_is_recalled_by_kilo(kilo: tuple[Path, Path], tmp_path: Path) -> None:
    if str(CLAUDE_TESTS) not in sys.path:
        sys.path.insert(0, str(CLAUDE_TESTS))
    from claude_harness import install_claude

    from paxm_contracttest.fake_models.anthropic import FakeAnthropic

    claude = install_claude(require_npm(pytest.skip), npm_cache_dir())
    box = KiloSandbox(tmp_path / "box", *kilo, claude=claude)
    box.paxm("setup", "--yes", "--agent", "claude", "--agent", "kilo", "--provider", "sqlite")
    box.generous_recall_budget()
    box.generous_opencode_budget()
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        with FakeAnthropic(tmp_path / "anthropic.jsonl", marker=marker) as anthropic:
            first = box.claude(anthropic, f"Decision: the metrics dashboard lives at {marker}.example from now on.")
            assert first.returncode == 0, first.stderr
        box.wait_for_daemon()
        box.paxm("__hook-control", "--flush")
        assert any(marker in t for t in box.memory_texts()), box.memory_texts()
        with FakeOpenAI(tmp_path / "openai.jsonl", marker=marker) as fake:
            box.configure_opencode(fake.url)
            run = box.opencode(fake, "Where does the metrics dashboard live?")
            _ok(run)
            steps = fake.agent_steps()
            assert steps and all(_recall_in(step, marker) for step in steps), [s.user_text()[-2000:] for s in steps]
            assert run.reply.endswith("[marker-seen]")
            print(f"LATENCY kilo turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
