"""Codex payload decoding, rollout tool capture and hook output (no binary needed)."""

from __future__ import annotations

import json
from pathlib import Path

from paxm_core.integration import HookResult
from paxm_core.passive.compose import safe_text
from paxm_integration_codex import CodexIntegration
from paxm_integration_codex.rollout import turn_tool_messages

FIXTURES = Path(__file__).parent / "fixtures"

CODEX = CodexIntegration()
SESSION = {
    "session_id": "0f1e2d3c-aaaa-7181-86af-174e7015b86c",
    "turn_id": "turn-b",
    "cwd": "/work/app",
    "model": "gpt-5",
    "permission_mode": "bypassPermissions",
}


def payload(event: str, **fields: object) -> bytes:
    return json.dumps({**SESSION, "hook_event_name": event, **fields}).encode()


def test_user_prompt_fields() -> None:
    event = CODEX.decode("UserPromptSubmit", payload("UserPromptSubmit", prompt="Which queue did we pick?"))
    assert (event.target, event.event, event.native_event) == ("codex", "user_input", "UserPromptSubmit")
    assert event.prompt == "Which queue did we pick?"
    assert event.workspace == "/work/app"
    assert event.metadata["session_id"] == SESSION["session_id"]
    assert event.metadata["turn_id"] == "turn-b"


def test_event_from_payload_when_the_command_line_names_none() -> None:
    event = CODEX.decode("", payload("Stop", last_assistant_message="done"))
    assert event.event == "turn_end" and event.assistant == "done"


def test_stop_uses_last_assistant_message_and_the_rollout_turn(tmp_path: Path) -> None:
    raw = payload(
        "Stop", last_assistant_message="We picked brisk-queue.", transcript_path=str(FIXTURES / "codex_rollout.jsonl")
    )
    event = CODEX.decode("Stop", raw)
    assert event.assistant == "We picked brisk-queue."
    # only the turn since the last task_started; reasoning never read; one copy of each
    assert [m.text for m in event.messages] == ['shell {"cmd":"cat Makefile"}', "build: go build"]
    assert [m.role for m in event.messages] == ["tool_call", "tool_result"]
    assert safe_text(event, CODEX.label).startswith("Codex assistant response:\nWe picked brisk-queue.")
    missing = CODEX.decode("Stop", payload("Stop", transcript_path=str(tmp_path / "nope.jsonl")))
    assert missing.messages == []


def test_rollout_turn_by_id_and_reasoning_stripped() -> None:
    path = str(FIXTURES / "codex_rollout_turns.jsonl")
    by_id = turn_tool_messages(path, "turn-a")
    assert [m.text for m in by_id] == ['exec_command {"cmd":"ls a"}', "a.txt"]  # a replayed turn gets its own tools
    last = turn_tool_messages(path, "unknown-turn")
    texts = [m.text for m in last]
    assert texts == ["apply_patch *** Begin Patch", '{"output":"Done"}']
    assert not any("SECRET-THOUGHT" in t for t in texts)


def test_rollout_tail_read_skips_the_cut_line(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    lines = [json.dumps({"type": "event_msg", "payload": {"type": "task_started"}})]
    lines += [
        json.dumps({"type": "response_item", "payload": {"type": "function_call", "name": "n", "arguments": "x" * 50}})
    ] * 50
    path.write_text("\n".join(lines) + "\n")
    messages = turn_tool_messages(str(path), limit=1000)
    assert messages and all(m.text.startswith("n ") for m in messages)


def test_tool_use_payload() -> None:
    raw = payload(
        "PostToolUse", tool_name="Bash", tool_input={"command": "echo hi"}, tool_response="hi\n", tool_use_id="c1"
    )
    event = CODEX.decode("PostToolUse", raw)
    assert event.event == "tool_use"
    assert [(m.role, m.text) for m in event.messages] == [
        ("tool_call", 'Bash {"command":"echo hi"}'),
        ("tool_result", "hi"),
    ]


def test_garbage_never_raises() -> None:
    for raw in (b"", b"not json", b"[1,2]", b"\xff\xfe", b'{"transcript_path": 5}'):
        event = CODEX.decode("Stop", raw)
        assert event.target == "codex" and event.messages == []


def test_hook_output_is_codex_native_json_for_context_events_only() -> None:
    for event, native in (("user_input", "UserPromptSubmit"), ("session_start", "SessionStart")):
        result = HookResult(target="codex", event=event, recall_context="<paxm-recall>x</paxm-recall>")
        assert CODEX.hook_output(result, "text") == "<paxm-recall>x</paxm-recall>"
        out = json.loads(CODEX.hook_output(result, "json"))
        assert out == {
            "hookSpecificOutput": {"hookEventName": native, "additionalContext": "<paxm-recall>x</paxm-recall>"}
        }

    for mode in ("json", "text"):
        assert CODEX.hook_output(HookResult(target="codex", event="turn_end", recall_context="x"), mode) == ""
    assert CODEX.hook_output(HookResult(target="codex", event="user_input", recall_context="  "), "json") == ""
    ignored = HookResult(target="codex", event="user_input", recall_context="x")
    ignored.ignored = True
    assert CODEX.hook_output(ignored, "json") == ""


def test_identity() -> None:
    assert CODEX.name == "codex" and CODEX.owners == ("codex-plugin",)
    assert CODEX.default_agent_config()["hooks"]["user_input"]["recall"]["initial"]["max_results"] == 5
    assert CODEX.default_agent_config() is not CODEX.default_agent_config()


def test_pre_tool_use_is_the_pre_tool_event_and_its_context_is_always_json() -> None:
    raw = payload("PreToolUse", tool_name="Bash", tool_input={"command": "cat src/tax.py"}, tool_use_id="c2")
    event = CODEX.decode("PreToolUse", raw)
    assert event.event == "pre_tool" and event.native_event == "PreToolUse"
    result = HookResult(target="codex", event="pre_tool", recall_context="<paxm-recall>x</paxm-recall>")
    for mode in ("json", "text"):  # Codex reads only JSON before a tool
        assert json.loads(CODEX.hook_output(result, mode)) == {
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "<paxm-recall>x</paxm-recall>"}
        }
    assert CODEX.hook_output(HookResult(target="codex", event="pre_tool"), "json") == ""
