"""End to end with the real Pi coding agent (offline, fake Chat Completions server on 127.0.0.1).

Every test runs under each pinned Pi build (``harnesses.PI_BUILDS`` of the shared real-binary kit:
the old npm scope, the new scope's last 0.7x on Node 20, the current 1.x on Node 24).  paxm's extension is installed
with ``paxm setup``; the checks are on what the model is actually sent.  Wall times are printed
as ``LATENCY`` lines (run with ``-s`` to see them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest.fake_models.anthropic import FakeAnthropic
from paxm_contracttest.fake_models.chat_completions import FakeOpenAI
from paxm_contracttest.harness import kit
from paxm_contracttest.harness.harnesses import CLAUDE, PI_BUILDS
from paxm_contracttest.model_input import assert_no_hook_noise, recalled

pytestmark = [pytest.mark.harness, pytest.mark.slow]

ENVELOPE = '<paxm-recall version="1" mode="passive">'


#: Pi's own error output, which must never reach the model
NOISE = ("Error: spawn",)


def _garbage_free(request: object) -> None:
    assert_no_hook_noise(_user_text(request), extra=NOISE)


def _recall_in(request: object, marker: str) -> bool:
    return recalled(_user_text(request), marker)


pi = kit.installed_fixture(*PI_BUILDS.values())
claude = kit.installed_fixture(CLAUDE)


@pytest.fixture
def box(pi: tuple[kit.Harness, kit.Installed], tmp_path: Path) -> kit.HarnessBox:
    return kit.HarnessBox(tmp_path / "box", *pi)


def _agent_dir(box: kit.HarnessBox) -> Path:
    return box.home / ".pi" / "agent"


def _extension(box: kit.HarnessBox) -> Path:
    return _agent_dir(box) / "extensions" / "paxm-hook" / "index.ts"


def _pi_rpc(
    box: kit.HarnessBox, url: str, prompts: list[str], *, timeout: float = 240
) -> tuple[kit.Turn, list[dict[str, Any]]]:
    """One interactive-mode session (``pi --mode rpc``: ``ctx.hasUI`` is true) running ``prompts``.

    Each prompt is sent after the previous run's ``agent_end``; returns the finished process
    and every JSON line Pi wrote (events, responses, ``extension_ui_request``s).
    """
    argv = [*box.argv("")[:-2], "--mode", "rpc"]
    started = time.monotonic()
    deadline = started + timeout
    out: list[dict[str, Any]] = []
    box.point_at(url)
    with subprocess.Popen(
        argv,
        cwd=box.workspace,
        env=box.turn_env(url),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        try:
            for prompt in prompts:
                process.stdin.write(json.dumps({"type": "prompt", "message": prompt}) + "\n")
                process.stdin.flush()
                while time.monotonic() < deadline:
                    line = process.stdout.readline()
                    if not line:
                        break
                    try:
                        value = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(value, dict):
                        out.append(value)
                        if value.get("type") == "agent_end":
                            break
            process.stdin.close()  # end of input: Pi shuts the session down
            process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except BaseException:
            process.kill()
            raise
        stderr = process.stderr.read()
    return kit.Turn(process.returncode, "", stderr, time.monotonic() - started), out


def _ok(run: kit.Turn) -> None:
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.reply, run.stderr[-4000:]
    assert "paxm" not in run.stderr.lower(), run.stderr[-4000:]  # fail-open means silent, too


def _user_text(request: object) -> str:
    return request.user_text()  # type: ignore[attr-defined, no-any-return]


def _tree(box: kit.HarnessBox) -> list[Path]:
    return sorted(p.relative_to(_agent_dir(box)) for p in _agent_dir(box).rglob("*") if "sessions" not in p.parts)


def _setup(box: kit.HarnessBox, *agents: str) -> None:
    args = [a for agent in agents or ("pi",) for a in ("--agent", agent)]
    box.paxm("setup", "--yes", *args, "--provider", "sqlite")


def test_decision_with_a_tool_call_is_captured_and_recalled_in_the_next_session(
    box: kit.HarnessBox, tmp_path: Path
) -> None:
    _setup(box)
    assert _extension(box).is_file()
    box.generous_recall_budget()
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl", marker=marker) as fake:
            box.point_at(fake.url)
            before = _tree(box)
            first = box.turn(fake, f"RUN_TOOL: Decision: release branches are named {marker}-<version> from now on.")
            _ok(first)
            steps = fake.completions()
            assert len(steps) == 2 and steps[1].has_tool_result  # the turn ran the tool
            print(f"LATENCY pi {box.harness.cache} session 1 (tool call, capture): wall_s={first.wall:.2f}")

            box.wait_for_daemon()  # the first hook started it
            box.paxm("__hook-control", "--flush")
            stored = [t for t in box.memory_texts() if marker in t]
            assert stored, box.memory_texts()
            assert any("Noted, I will remember that." in t for t in stored)  # the final assistant text
            # the run's tool call (with its arguments) and its result are part of the captured turn
            assert any('Tool call: bash {"command":"echo TOOL_RAN_OK"' in t and "TOOL_RAN_OK" in t for t in stored)

            seen = len(fake.completions())
            second = box.turn(fake, "RUN_TOOL: which naming scheme did we decide on for release branches?")
            _ok(second)
            steps = fake.completions()[seen:]
            assert len(steps) == 2 and steps[1].has_tool_result
            for step in steps:  # every model request of the turn, including the one after the tool call
                assert _recall_in(step, marker), _user_text(step)[-3000:]
                assert _user_text(step).count(ENVELOPE) == 1
            assert second.reply.endswith("[marker-seen]")
            print(f"LATENCY pi {box.harness.cache} session 2 (recall): wall_s={second.wall:.2f}")
            for request in fake.completions():
                _garbage_free(request)
    finally:
        box.stop_daemon()
    box.paxm("uninstall", "--agent", "pi", "--yes")
    assert not _extension(box).exists()
    assert not _extension(box).parent.exists()
    after = _tree(box)
    assert set(before) - set(after) == {Path("extensions/paxm-hook"), Path("extensions/paxm-hook/index.ts")}


FAILING = [kit.daemon_down_turn, kit.broken_config_turn, kit.hanging_provider_turn]


@pytest.mark.parametrize("flow", FAILING, ids=["daemon_down", "broken_config", "hanging_provider"])
def test_turn_completes_clean_when_paxm_fails(box: kit.HarnessBox, flow: Callable[..., kit.Turn]) -> None:
    """paxm's daemon down (nothing is lost: it drains the turn on start), its config broken, or a
    memory provider that never answers (the turn costs at most the hook client's ceiling)."""
    _setup(box)
    run = flow(box, check=_ok, noise=NOISE)
    print(f"LATENCY pi {box.harness.cache} {flow.__name__}: wall_s={run.wall:.2f}")


def test_paxm_uninstalled_underneath_a_running_turn(box: kit.HarnessBox, tmp_path: Path) -> None:
    _setup(box)
    kit.generated_file_outlives_paxm(box, tmp_path, hang=3.0, check=_ok, noise=NOISE)


def test_decision_captured_by_claude_code_is_recalled_by_pi(
    pi: tuple[kit.Harness, kit.Installed], claude: tuple[kit.Harness, kit.Installed], tmp_path: Path
) -> None:
    box = kit.HarnessBox(tmp_path / "box", *pi)
    first_box = kit.HarnessBox(tmp_path / "box", *claude)  # the same HOME, workspace and paxm config
    _setup(box, "claude", "pi")
    first_box.generous_recall_budget()
    box.generous_recall_budget()
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        with FakeAnthropic(tmp_path / "anthropic.jsonl", marker=marker) as anthropic:
            first = first_box.turn(anthropic, f"Decision: the metrics dashboard lives at {marker}.example from now on.")
            assert first.returncode == 0, first.stderr
        box.wait_for_daemon()
        box.paxm("__hook-control", "--flush")
        assert any(marker in t for t in box.memory_texts()), box.memory_texts()

        with FakeOpenAI(tmp_path / "openai.jsonl", marker=marker) as fake:
            box.point_at(fake.url)
            run = box.turn(fake, "Where does the metrics dashboard live?")
            _ok(run)
            steps = fake.completions()
            assert steps and all(_recall_in(step, marker) for step in steps), [_user_text(s)[-2000:] for s in steps]
            assert run.reply.endswith("[marker-seen]")
            print(f"LATENCY pi {box.harness.cache} turn recalling a Claude Code decision: wall_s={run.wall:.2f}")
    finally:
        box.stop_daemon()


def test_interactive_session_captures_every_run_and_a_failed_recall_is_a_notification(
    box: kit.HarnessBox, tmp_path: Path
) -> None:
    _setup(box)
    first, second = (f"{name}-{uuid.uuid4().hex[:10]}" for name in ("PLOVER", "CURLEW"))
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl") as fake:
            box.point_at(fake.url)
            run, events = _pi_rpc(
                box, fake.url, [f"Remember: the cache host is {first}.", f"Also: the queue host is {second}."]
            )
            assert run.returncode == 0, run.stderr[-4000:]
            assert [e["type"] for e in events].count("agent_end") == 2
            assert not [e for e in events if e.get("type") == "extension_ui_request"]  # all went well: silent
        box.wait_for_daemon()
        box.paxm("__hook-control", "--flush")
        texts = box.memory_texts()
        # two runs of one session, each captured once, neither mixed into the other
        assert len([t for t in texts if first in t]) == 1 and len([t for t in texts if second in t]) == 1, texts
        assert not any(first in t and second in t for t in texts), texts
    finally:
        box.stop_daemon()

    # paxm's interpreter is gone: the turn goes on, and the UI says recall was unavailable
    source = _extension(box).read_text()
    _extension(box).write_text(source.replace(f'"{os.path.abspath(sys.executable)}"', '"/nonexistent/python"'))
    with FakeOpenAI(tmp_path / "requests2.jsonl") as fake:
        box.point_at(fake.url)
        run, events = _pi_rpc(box, fake.url, ["Hello there"])
        assert run.returncode == 0, run.stderr[-4000:]
        assert "agent_end" in [e["type"] for e in events]
        (note,) = [e for e in events if e.get("type") == "extension_ui_request"]
        assert note["method"] == "notify" and note["notifyType"] == "warning" and "paxm" in note["message"]
        assert not any(e.get("type") == "response" and e.get("success") is False for e in events)
