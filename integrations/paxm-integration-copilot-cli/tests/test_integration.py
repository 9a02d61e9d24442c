"""The ``copilot-cli`` integration: hook-file goldens through the CLI, decode of captured payloads, output."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from paxm_contracttest import cli_reinstall_doctor_uninstall, cli_setup, cli_setup_under_home, paxm_cli
from paxm_core.envelope import wrap_recall_context
from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_FAILURE,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    HookResult,
)
from paxm_integration_copilot_cli import CopilotCliIntegration
from paxm_integration_copilot_cli.transcript import last_turn, wait_for_turn

FIXTURES = Path(__file__).parent / "fixtures"
#: the user's own hook file and Copilot's config files, as a user with hooks of their own has them
USER_HOOKS = {
    "version": 1,
    "hooks": {
        "userPromptSubmitted": [{"type": "command", "bash": "~/bin/audit-prompt", "timeoutSec": 5}],
        "preToolUse": [{"type": "command", "bash": "~/bin/guard", "powershell": "guard.ps1"}],
    },
}
USER_CONFIG = '// User settings belong in settings.json.\n{\n  "firstLaunchAt": "2026-11-01T09:00:00.000Z"\n}\n'
USER_SETTINGS = {"model": "gpt-5", "trusted_folders": ["/work"]}


def _fixture(name: str) -> bytes:
    return (FIXTURES / f"{name}.json").read_bytes()


def _user_files(home: Path) -> dict[str, str]:
    copilot = home / ".copilot"
    (copilot / "hooks").mkdir(parents=True)
    files = {
        "hooks/audit.json": json.dumps(USER_HOOKS, indent=2) + "\n",
        "config.json": USER_CONFIG,
        "settings.json": json.dumps(USER_SETTINGS) + "\n",
    }
    for name, text in files.items():
        (copilot / name).write_text(text)
    return files


def test_setup_writes_paxms_own_hook_file_and_uninstall_removes_it(tmp_path: Path, isolated_home: Path) -> None:
    files = _user_files(isolated_home)
    hooks = isolated_home / ".copilot" / "hooks" / "paxm.json"
    data = cli_setup(tmp_path, "copilot", hooks)
    assert list(data) == ["version", "hooks"] and data["version"] == 1
    assert list(data["hooks"]) == ["sessionStart", "userPromptSubmitted", "agentStop"]
    ours = data["hooks"]["userPromptSubmitted"][0]
    assert (ours["type"], ours["timeoutSec"]) == ("command", 10)
    assert "--target copilot-cli" in ours["bash"] and "--event userPromptSubmitted" in ours["bash"]
    assert ours["bash"].startswith("/bin/sh -c ")  # the fail-open guard
    for name, text in files.items():  # the user's files are not touched
        assert (isolated_home / ".copilot" / name).read_text() == text

    cli_reinstall_doctor_uninstall(
        tmp_path, hooks, data, agent="copilot", alias="copilot-cli", display_name="GitHub Copilot CLI"
    )
    assert not hooks.exists()
    assert sorted(p.name for p in (isolated_home / ".copilot" / "hooks").iterdir()) == ["audit.json"]
    for name, text in files.items():
        assert (isolated_home / ".copilot" / name).read_text() == text


def test_the_users_own_handlers_in_paxm_json_survive_install_and_uninstall(tmp_path: Path, isolated_home: Path) -> None:
    hooks = isolated_home / ".copilot" / "hooks" / "paxm.json"
    hooks.parent.mkdir(parents=True)
    ding = {"type": "command", "bash": "~/bin/ding"}
    mine = {"version": 1, "hooks": {"agentStop": [ding]}, "note": "mine"}
    hooks.write_text(json.dumps(mine))
    assert paxm_cli(tmp_path, "setup", "--yes", "--agent", "copilot", "--provider", "sqlite").returncode == 0
    data = json.loads(hooks.read_text())
    assert data["hooks"]["agentStop"][0] == ding and len(data["hooks"]["agentStop"]) == 2
    assert paxm_cli(tmp_path, "uninstall", "--agent", "copilot", "--yes").returncode == 0
    assert json.loads(hooks.read_text()) == mine


def test_copilot_home_moves_the_hook_file(tmp_path: Path, isolated_home: Path) -> None:
    other = tmp_path / "cophome"
    hooks = other / "hooks" / "paxm.json"
    cli_setup_under_home(tmp_path, "copilot", {"COPILOT_HOME": str(other)}, hooks, "userPromptSubmitted")


@pytest.mark.parametrize("bad", ['{"hooks": [', '{"hooks": {"agentStop": {}}}', "[1]"])
def test_a_paxm_json_paxm_cannot_merge_stops_setup_before_anything_is_written(
    tmp_path: Path, isolated_home: Path, bad: str
) -> None:
    hooks = isolated_home / ".copilot" / "hooks" / "paxm.json"
    hooks.parent.mkdir(parents=True)
    hooks.write_text(bad)
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", "copilot", "--provider", "sqlite")
    assert done.returncode != 0 and "paxm changed nothing" in done.stderr
    assert hooks.read_text() == bad
    assert not (tmp_path / "paxm" / "config.yaml").exists()


def test_decode_of_payloads_captured_from_copilot_cli(tmp_path: Path) -> None:
    copilot = CopilotCliIntegration()
    session = "e57f4c5a-305a-427f-8fb3-ed01ec86b4bc"
    prompt = copilot.decode("userPromptSubmitted", _fixture("userPromptSubmitted"))
    assert (prompt.target, prompt.event, prompt.native_event) == (
        "copilot-cli",
        EVENT_USER_INPUT,
        "userPromptSubmitted",
    )
    assert prompt.prompt == "RUN_TOOL: hello there"
    assert prompt.metadata["session_id"] == session and prompt.workspace
    assert json.loads(prompt.raw)["prompt"] == "RUN_TOOL: hello there"  # the native payload is kept as raw
    start = copilot.decode("sessionStart", _fixture("sessionStart"))
    assert (start.event, start.metadata["source"], start.prompt) == (EVENT_SESSION_START, "new", "")
    tool = copilot.decode("postToolUse", _fixture("postToolUse"))
    assert tool.event == EVENT_TOOL_USE
    assert [m.role for m in tool.messages] == ["tool_call", "tool_result"]
    assert tool.messages[0].text.startswith("bash ") and "TOOL_RAN_OK" in tool.messages[1].text
    failed = json.loads(_fixture("postToolUse"))
    failed["toolResult"] = {"resultType": "failure", "textResultForLlm": "permission denied"}
    failure = copilot.decode("postToolUse", json.dumps(failed).encode())
    assert failure.event == EVENT_TOOL_FAILURE and "Error: permission denied" in failure.messages[-1].text

    # agentStop names the session's events.jsonl; the captured one is copied to that path
    stop = json.loads(_fixture("agentStop"))
    transcript = tmp_path / "session-state" / session / "events.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes((FIXTURES / "events.jsonl").read_bytes())
    stop["transcriptPath"] = str(transcript)
    end = copilot.decode("agentStop", json.dumps(stop).encode())
    assert (end.event, end.assistant) == (EVENT_TURN_END, "Noted, I will remember that. [marker-seen]")
    assert end.metadata["transcript_path"] == str(transcript)
    stop["transcriptPath"] = str(tmp_path / "gone" / "events.jsonl")
    missing = copilot.decode("agentStop", json.dumps(stop).encode())  # no file: no reply, no error
    assert (missing.event, missing.assistant) == (EVENT_TURN_END, "")
    assert copilot.decode("agentStop", b"not json").event == EVENT_TURN_END


def _line(kind: str, **data: object) -> str:
    return json.dumps({"type": kind, "data": data}) + "\n"


def test_the_transcript_read_is_bounded_tolerant_and_never_takes_reasoning(tmp_path: Path) -> None:
    transcript = tmp_path / "events.jsonl"
    transcript.write_text(
        _line("user.message", content="old question")
        + _line("assistant.message", content="old answer")
        + _line("user.message", content="new question")
        + _line("assistant.message", content="", reasoningText="SECRET-REASONING", toolRequests=[{"name": "bash"}])
        + "{not json\n"
        + _line("assistant.message", content="final answer", reasoningText="SECRET-REASONING", reasoningOpaque="x")
        + '{"type": "assistant.message", "data": {"content": "half wri'  # mid-write
    )
    turn = last_turn(str(transcript))
    assert (turn.prompt, turn.reply) == ("new question", "final answer")
    # a new prompt without a reply yet has no reply (never the previous turn's)
    with transcript.open("a") as handle:
        handle.write("\n" + _line("user.message", content="third"))
    assert last_turn(str(transcript)).reply == ""
    # only the tail is read: a huge file costs no more than the limit
    big = tmp_path / "big" / "events.jsonl"
    big.parent.mkdir()
    with big.open("w") as handle:
        handle.write(_line("user.message", content="q") + _line("assistant.message", content="early"))
        handle.write(_line("tool.execution_complete", result={"content": "x" * 1_000_000}))
        handle.write(_line("assistant.message", content="late"))
    assert last_turn(str(big), limit=4096).reply == "late"
    assert last_turn(str(tmp_path / "nope" / "events.jsonl")).reply == ""
    other = tmp_path / "secrets.txt"
    other.write_text(_line("assistant.message", content="not a transcript"))
    assert last_turn(str(other)).reply == ""  # only files named events.jsonl are read
    assert last_turn(str(tmp_path)).reply == ""


def test_output_is_top_level_additional_context_for_context_events_only() -> None:
    copilot = CopilotCliIntegration()
    context = wrap_recall_context("passive", "Release branches are release/<v>.")
    out = json.loads(
        copilot.hook_output(HookResult(target="copilot-cli", event=EVENT_USER_INPUT, recall_context=context), "")
    )
    assert out == {"additionalContext": context}
    start = HookResult(
        target="copilot-cli", event=EVENT_SESSION_START, session_context="<paxm-identity>x</paxm-identity>"
    )
    assert json.loads(copilot.hook_output(start, "json")) == {"additionalContext": "<paxm-identity>x</paxm-identity>"}
    for event in (EVENT_TURN_END, EVENT_TOOL_USE):
        assert copilot.hook_output(HookResult(target="copilot-cli", event=event, recall_context="x"), "") == ""
    assert copilot.hook_output(HookResult(target="copilot-cli", event=EVENT_USER_INPUT), "") == ""


def test_the_reply_is_waited_for_while_copilot_is_still_writing_the_turn(tmp_path: Path) -> None:
    transcript = tmp_path / "events.jsonl"
    transcript.write_text(_line("user.message", content="q"))

    def finish() -> None:  # Copilot appends the reply and the agentStop hook call a little later
        time.sleep(0.3)
        with transcript.open("a") as handle:
            handle.write(_line("assistant.message", content="the answer") + _line("hook.start", hookType="agentStop"))

    writer = threading.Thread(target=finish)
    writer.start()
    started = time.monotonic()
    turn = wait_for_turn(str(transcript), timeout=5)
    writer.join()
    assert (turn.reply, turn.stopped) == ("the answer", True)
    assert 0.25 < time.monotonic() - started < 3
    # a finished turn without a reply (only tool calls) is not waited for
    transcript.write_text(_line("user.message", content="q") + _line("hook.start", hookType="agentStop"))
    started = time.monotonic()
    assert wait_for_turn(str(transcript), timeout=5).reply == ""
    assert time.monotonic() - started < 1
    # neither is a missing file; a turn that never finishes costs the bound, no more
    started = time.monotonic()
    assert wait_for_turn(str(tmp_path / "gone" / "events.jsonl"), timeout=5).reply == ""
    assert time.monotonic() - started < 1
    transcript.write_text(_line("user.message", content="q"))
    started = time.monotonic()
    assert wait_for_turn(str(transcript), timeout=0.3).reply == ""
    assert time.monotonic() - started < 2


def test_a_session_log_not_written_yet_is_waited_for(tmp_path: Path) -> None:
    session = tmp_path / "session-state" / "s1"
    session.mkdir(parents=True)
    transcript = session / "events.jsonl"

    def create() -> None:  # Copilot writes a new session's log asynchronously, after the hook started
        time.sleep(0.3)
        transcript.write_text(
            _line("user.message", content="q")
            + _line("assistant.message", content="late answer")
            + _line("hook.start", hookType="agentStop")
        )

    writer = threading.Thread(target=create)
    writer.start()
    turn = wait_for_turn(str(transcript), timeout=5)
    writer.join()
    assert (turn.reply, turn.stopped) == ("late answer", True)
