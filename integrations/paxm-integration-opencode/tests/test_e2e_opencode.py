"""End to end with the real OpenCode binary (offline, fake Chat Completions server on 127.0.0.1).

Installs the pinned ``opencode-ai`` with npm into a cache directory (see ``opencode_harness``),
installs paxm's plugin with ``paxm setup``, and checks what the model is actually sent on every
agent-loop step.  Wall times are printed as ``LATENCY`` lines (run with ``-s`` to see them).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from opencode_harness import OpenCodeRun, OpenCodeSandbox, install_opencode, npm_cache_dir, require_npm

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI, Recorded
from paxm_contracttest.model_input import assert_no_hook_noise, recalled

pytestmark = [pytest.mark.harness, pytest.mark.slow]

ENVELOPE = '<paxm-recall version="1" mode="passive">'
CLAUDE_TESTS = Path(__file__).resolve().parents[2] / "paxm-integration-claude-code" / "tests"
HANG_PROVIDER = CLAUDE_TESTS / "hang_provider.py"


def _garbage_free(request: Recorded) -> None:
    assert_no_hook_noise(request.user_text(), extra=("Error:",))


def _recall_in(request: Recorded, marker: str) -> bool:
    return recalled(request.user_text(), marker)


@pytest.fixture(scope="session")
def opencode() -> tuple[Path, Path]:
    return install_opencode(require_npm(pytest.skip), npm_cache_dir())


@pytest.fixture
def box(opencode: tuple[Path, Path], tmp_path: Path) -> OpenCodeSandbox:
    return OpenCodeSandbox(tmp_path / "box", *opencode)


def _ok(run: OpenCodeRun) -> None:
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.reply, run.stdout[-4000:]
    # paxm's plugin must not make OpenCode wait for its config-dir dependency install
    assert "dependency install failed" not in run.stderr, run.stderr[-4000:]


def _tree(box: OpenCodeSandbox) -> list[Path]:
    return sorted(p.relative_to(box.opencode_dir) for p in box.opencode_dir.rglob("*") if p.name != "node_modules")


def _setup(box: OpenCodeSandbox, *agents: str) -> None:
    args = [a for agent in agents or ("opencode",) for a in ("--agent", agent)]
    box.paxm("setup", "--yes", *args, "--provider", "sqlite")


def test_decision_with_a_tool_call_is_recalled_in_every_request_of_the_next_session(
    box: OpenCodeSandbox, tmp_path: Path
) -> None:
    _setup(box)
    box.generous_opencode_budget()
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl", marker=marker) as fake:
            box.configure_opencode(fake.url)
            before = _tree(box)
            first = box.opencode(
                fake, f"RUN_TOOL: Decision: release branches are named {marker}-<version> from now on."
            )
            _ok(first)
            steps = fake.agent_steps()
            assert len(steps) == 2 and steps[1].has_tool_result  # the turn ran the tool
            print(f"LATENCY opencode session 1 (tool call, capture): wall_s={first.wall:.2f}")

            box.wait_for_daemon()  # the first hook started it
            box.paxm("__hook-control", "--flush")
            stored = [t for t in box.memory_texts() if marker in t]
            assert stored, box.memory_texts()
            assert any("Noted, I will remember that." in t for t in stored)  # the final assistant text
            assert not any("TOOL_RAN_OK" in t for t in stored)  # tool parts are not turn text

            seen = len(fake.agent_steps())
            second = box.opencode(fake, "RUN_TOOL: which naming scheme did we decide on for release branches?")
            _ok(second)
            steps = fake.agent_steps()[seen:]
            assert len(steps) == 2 and steps[1].has_tool_result, [s.user_text()[-300:] for s in steps]
            for step in steps:  # every model request of the turn, including the one after the tool call
                assert _recall_in(step, marker), step.user_text()[-3000:]
                assert step.user_text().count(ENVELOPE) == 1
            assert second.reply.endswith("[marker-seen]")
            print(f"LATENCY opencode session 2 (recall on every step): wall_s={second.wall:.2f}")
            for request in fake.completions():
                _garbage_free(request)
    finally:
        box.stop_daemon()
    box.paxm("uninstall", "--agent", "opencode", "--yes")
    assert not box.plugin_file.exists()
    after = _tree(box)
    assert [p for p in after if p.parts[0] == "plugins"] == [Path("plugins")]
    assert set(before) - set(after) <= {Path("plugins") / "paxm.js"}


def test_daemon_down_turn_completes_and_nothing_is_lost(box: OpenCodeSandbox, tmp_path: Path) -> None:
    _setup(box)
    marker = f"OSPREY-{uuid.uuid4().hex[:10]}"
    hooks = box.config.parent / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    # Hold the daemon lock: every daemon a hook client tries to start gives up at once, so every
    # hook of the turn finds no daemon and takes the inbox path.
    with open(hooks / "paxm-hook.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with FakeOpenAI(tmp_path / "requests.jsonl", marker=marker) as fake:
            box.configure_opencode(fake.url)
            run = box.opencode(fake, f"Remember: the staging database is called {marker}.")
            _ok(run)
            for request in fake.completions():
                _garbage_free(request)
                assert ENVELOPE not in request.user_text()
        print(f"LATENCY opencode daemon down: wall_s={run.wall:.2f}")
        fcntl.flock(lock, fcntl.LOCK_UN)
    (hooks / "paxm-hook.lock").unlink()
    daemon = box.start_daemon()  # drains the inbox on start
    try:
        box.paxm("__hook-control", "--flush")
        assert any(marker in t for t in box.memory_texts())
    finally:
        box.stop_daemon(daemon)


def test_hanging_memory_provider_costs_at_most_the_client_ceiling(box: OpenCodeSandbox, tmp_path: Path) -> None:
    _setup(box)
    data = box.config_data()
    data["providers"]["stuck"] = {
        "type": "jsonrpc",
        "enabled": True,
        "command": sys.executable,
        "args": [str(HANG_PROVIDER)],
        "timeout": "60s",
    }
    for profile in ("passive", "passive_initial"):
        data["recall_profiles"][profile]["providers"].append({"name": "stuck", "required": False, "timeout": "8s"})
    box.write_config_data(data)
    box.paxm("remember", "--text", "The deploy window is Tuesday afternoon.")
    daemon = box.start_daemon()
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl") as fake:
            box.configure_opencode(fake.url)
            run = box.opencode(fake, "When is the deploy window?")
            _ok(run)
            for request in fake.completions():
                _garbage_free(request)
        # the recall budget (8.1 s) is longer than the client's 5 s ceiling: the client gave up;
        # the plugin's own 10 s limit never had to act
        assert run.wall < 60
        print(f"LATENCY opencode hanging provider: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon(daemon)


def test_broken_config_turn_completes_clean(box: OpenCodeSandbox, tmp_path: Path) -> None:
    _setup(box)
    box.config.write_text("providers: [this is: not valid\n")
    with FakeOpenAI(tmp_path / "requests.jsonl") as fake:
        box.configure_opencode(fake.url)
        run = box.opencode(fake, "Hello there")
        _ok(run)
        assert run.reply.startswith("Noted")
        for request in fake.completions():
            _garbage_free(request)
            assert ENVELOPE not in request.user_text()
    print(f"LATENCY opencode broken config: wall_s={run.wall:.2f}")
    deadline = time.monotonic() + 10
    while box.daemon_pid() and time.monotonic() < deadline:  # the daemon refuses the config and exits
        time.sleep(0.1)
    assert not (box.config.parent / "hooks" / "paxm-hook.sock").exists()


def test_paxm_uninstalled_underneath_a_running_turn(box: OpenCodeSandbox, tmp_path: Path) -> None:
    _setup(box)
    try:
        # 1. `paxm uninstall` while the turn runs: the plugin is already loaded in OpenCode
        with FakeOpenAI(tmp_path / "requests.jsonl", hang=4.0) as fake:
            box.configure_opencode(fake.url)
            argv = [str(box.opencode_bin), "run", "--format", "json", "Hello there"]
            env = box.env(OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1")
            with subprocess.Popen(
                argv, cwd=box.workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            ) as process:
                deadline = time.monotonic() + 120
                while not fake.completions() and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert fake.completions(), "OpenCode sent no model request"
                box.paxm("uninstall", "--agent", "opencode", "--yes")
                assert not box.plugin_file.exists()
                out, err = process.communicate(timeout=180)
            run = OpenCodeRun(process.returncode, out, err, 0.0)
            _ok(run)
            for request in fake.completions():
                _garbage_free(request)

        # 2. the paxm installation itself is gone (interpreter and client), the plugin is still there
        fake_python = tmp_path / "gone" / "python"
        fake_python.parent.mkdir()
        fake_python.symlink_to(sys.executable)
        box.paxm("setup", "--yes", "--agent", "opencode", "--provider", "sqlite", "--force")
        source = box.plugin_file.read_text()
        box.plugin_file.write_text(source.replace(f'"{os.path.abspath(sys.executable)}"', f'"{fake_python}"'))
        assert str(fake_python) in box.plugin_file.read_text()
        fake_python.unlink()
        with FakeOpenAI(tmp_path / "requests2.jsonl") as fake:
            box.configure_opencode(fake.url)
            run = box.opencode(fake, "Hello again")
            _ok(run)
            assert run.reply.startswith("Noted")
            for request in fake.completions():
                _garbage_free(request)
                assert ENVELOPE not in request.user_text()
    finally:
        box.stop_daemon()


def test_decision_captured_by_claude_code_is_recalled_by_opencode(opencode: tuple[Path, Path], tmp_path: Path) -> None:
    if str(CLAUDE_TESTS) not in sys.path:
        sys.path.insert(0, str(CLAUDE_TESTS))
    from claude_harness import install_claude

    from paxm_contracttest.fake_models.anthropic import FakeAnthropic

    npm = require_npm(pytest.skip)
    claude = install_claude(npm, npm_cache_dir())
    box = OpenCodeSandbox(tmp_path / "box", *opencode, claude=claude)
    _setup(box, "claude", "opencode")
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
            print(f"LATENCY opencode turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()
