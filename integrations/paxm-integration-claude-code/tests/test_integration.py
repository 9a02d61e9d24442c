"""The ``claude`` integration object: registration, payload decoding, output, echo suppression.

Payloads follow what Claude Code 2.1.197 sends (captured in the harness samples).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from paxm_core.integration import HookResult
from paxm_core.passive.compose import compose_write
from paxm_integration_claude_code import ClaudeCodeIntegration

SESSION = "6c2c5b96-8492-4c88-a376-7b36b01c4bb0"
BASE = {
    "session_id": SESSION,
    "transcript_path": f"/home/u/.claude/projects/-work/{SESSION}.jsonl",
    "cwd": "/work/repo",
}


def _raw(**fields: Any) -> bytes:
    return json.dumps({**BASE, **fields}).encode()


def _write_text(event: Any) -> str | None:
    write = compose_write(
        event,
        template="{{ .safe_text }}",
        profile="ltm",
        created_at=datetime.now(UTC),
        label=ClaudeCodeIntegration.label,
    )
    return None if write is None else write.text


def test_session_start() -> None:
    event = ClaudeCodeIntegration().decode("SessionStart", _raw(hook_event_name="SessionStart", source="startup"))
    assert (event.target, event.event, event.native_event) == ("claude", "session_start", "SessionStart")
    assert event.workspace == "/work/repo"
    assert event.metadata["session_id"] == SESSION and event.metadata["source"] == "startup"
    assert _write_text(event) == "Claude Code session started.\nWorkspace: /work/repo"


def test_user_prompt_submit() -> None:
    raw = _raw(hook_event_name="UserPromptSubmit", prompt="We deploy on Tuesdays.", permission_mode="default")
    event = ClaudeCodeIntegration().decode("UserPromptSubmit", raw)
    assert event.event == "user_input" and event.prompt == "We deploy on Tuesdays."
    assert _write_text(event) == "Claude Code user input:\nWe deploy on Tuesdays."


def test_post_tool_use_and_failure() -> None:
    integration = ClaudeCodeIntegration()
    used = integration.decode(
        "PostToolUse",
        _raw(
            hook_event_name="PostToolUse",
            tool_name="Bash",
            tool_input={"command": "echo TOOL_RAN_OK", "description": "probe"},
            tool_response={"stdout": "TOOL_RAN_OK", "stderr": "", "interrupted": False},
        ),
    )
    assert used.event == "tool_use"
    text = _write_text(used)
    assert text is not None and text.startswith("Claude Code tool activity:\nTool call: Bash ")
    assert '"stdout":"TOOL_RAN_OK"' in text
    failed = integration.decode(
        "PostToolUseFailure",
        _raw(hook_event_name="PostToolUseFailure", tool_name="Bash", tool_input={"command": "false"}, error="exit 1"),
    )
    assert failed.event == "tool_failure"
    assert (
        _write_text(failed)
        == 'Claude Code tool activity:\nTool call: Bash {"command":"false"}\nTool result: Error: exit 1'
    )


def test_stop_uses_last_assistant_message() -> None:
    raw = _raw(
        hook_event_name="Stop",
        stop_hook_active=False,
        last_assistant_message="Deploys happen on Tuesdays, noted.",
        background_tasks=[],
    )
    event = ClaudeCodeIntegration().decode("Stop", raw)
    assert event.event == "turn_end" and event.assistant == "Deploys happen on Tuesdays, noted."
    assert _write_text(event) == "Claude Code assistant response:\nDeploys happen on Tuesdays, noted."


def test_event_name_from_payload_and_normalized_names() -> None:
    integration = ClaudeCodeIntegration()
    assert integration.decode("", _raw(hook_event_name="Stop", last_assistant_message="x")).event == "turn_end"
    assert integration.decode("user_input", _raw(prompt="p")).event == "user_input"
    assert integration.decode("SubagentStop", _raw()).event == "SubagentStop"  # custom, write-only


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1,2]", b"\xff\xfe", b'{"prompt": 5}', b"{" * 5000])
def test_decode_never_raises(raw: bytes) -> None:
    event = ClaudeCodeIntegration().decode("UserPromptSubmit", raw)
    assert event.event == "user_input" and event.prompt == ""


def test_thinking_is_never_written() -> None:
    response = {"content": [{"type": "thinking", "thinking": "SECRET-REASONING"}, {"type": "text", "text": "done"}]}
    event = ClaudeCodeIntegration().decode(
        "PostToolUse", _raw(tool_name="Task", tool_input={"prompt": "x"}, tool_response=response)
    )
    text = _write_text(event)
    assert text is not None and "done" in text and "SECRET-REASONING" not in text


def test_paxm_recall_exchanges_are_never_written() -> None:
    integration = ClaudeCodeIntegration()
    recall_output = json.dumps({"query": "q", "hits": [], "paxm_context": {"version": 1, "kind": "recall"}})
    shell = integration.decode(
        "PostToolUse",
        _raw(
            tool_name="Bash", tool_input={"command": "paxm recall --query deploy --json"}, tool_response=recall_output
        ),
    )
    assert _write_text(shell) is None
    mcp = integration.decode(
        "PostToolUse",
        _raw(tool_name="mcp__plugin_paxm-claude_paxm__paxm_recall", tool_input={"query": "q"}, tool_response="x"),
    )
    assert _write_text(mcp) is None
    prompt = "Summarise this\n" + '<paxm-recall version="1" mode="passive">old memory</paxm-recall>'
    echoed = integration.decode("UserPromptSubmit", _raw(prompt=prompt))
    assert _write_text(echoed) == "Claude Code user input:\nSummarise this"


def _result(event: str, **fields: Any) -> HookResult:
    return HookResult(target="claude", event=event, **fields)


def test_render_plain_text_for_context_events_only() -> None:
    integration = ClaudeCodeIntegration()
    recall = '<paxm-recall version="1" mode="passive">\nRelevant memory recalled by paxm:\n\nx\n</paxm-recall>'
    assert integration.hook_output(_result("user_input", recall_context=recall), "text") == recall
    assert integration.hook_output(_result("session_start", session_context="<a>"), "text") == "<a>"
    assert integration.hook_output(_result("user_input", recall_ran=True), "text") == ""  # no "No memories found."
    for event in ("tool_use", "tool_failure", "turn_end"):
        assert integration.hook_output(_result(event, session_context="<a>", recall_context="<b>"), "text") == ""
    assert integration.hook_output(_result("user_input", recall_context=recall, ignored=True), "text") == ""


def test_render_json_mode() -> None:
    integration = ClaudeCodeIntegration()
    out = json.loads(integration.hook_output(_result("user_input", recall_context="<r>"), "json"))
    assert out == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "<r>"}}
    out = json.loads(integration.hook_output(_result("session_start", session_context="<s>"), "json"))
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert integration.hook_output(_result("turn_end"), "json") == ""  # Stop: never a "decision"
