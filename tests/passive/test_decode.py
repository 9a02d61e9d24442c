from __future__ import annotations

import json

from paxm_core.passive.compose import safe_text
from paxm_core.passive.decode import decode_generic, parse_payload, value_text

from .conftest import fixture_bytes


def test_claude_user_prompt_fields() -> None:
    event = decode_generic(fixture_bytes("claude_user_prompt_submit.json"), "claude", "user_input")
    assert event.prompt == "Which queue library did we pick for the ingest service?"
    assert event.workspace == "/work/app"
    assert event.metadata["session_id"] == "0b7c3f2e-1111-4d2a-9c55-5d0f6e2a7a01"
    assert event.metadata["transcript_path"].endswith(".jsonl")
    assert event.metadata["cwd"] == "/work/app"
    assert event.native_event == "UserPromptSubmit"


def test_stop_uses_last_assistant_message() -> None:
    event = decode_generic(fixture_bytes("claude_stop.json"), "claude", "turn_end")
    assert event.assistant == "We picked the brisk-queue library for the ingest service."
    assert safe_text(event, "Claude Code").startswith("Claude Code assistant response:\nWe picked the brisk-queue")


def test_tool_use_strips_reasoning_keys() -> None:
    event = decode_generic(fixture_bytes("claude_post_tool_use.json"), "claude", "tool_use")
    text = safe_text(event, "Claude Code")
    assert text.startswith("Claude Code tool activity:\nTool call: Bash ")
    assert "grep -r brisk-queue" in text
    assert "Tool result: " in text and "brisk-queue" in text
    assert "secret-thought-should-vanish" not in text


def test_tool_failure_uses_error_text() -> None:
    raw = json.dumps({"tool_name": "Read", "tool_input": {"path": "x"}, "error": "file not found"})
    event = decode_generic(raw, "claude", "tool_failure")
    assert [m.role for m in event.messages] == ["tool_call", "tool_result"]
    assert event.messages[1].text == "Error: file not found"


def test_generic_payload_messages_drop_hidden_reasoning() -> None:
    event = decode_generic(fixture_bytes("generic_turn_end.json"), "", "")
    assert event.target == "mytool" and event.event == "turn_end"
    assert event.metadata == {"ticket": "DEV-9", "session_id": "s-42", "cwd": "/work/app"}
    rendered = safe_text(event)
    assert "User: Use port 8123 for the dev server." in rendered
    assert "Assistant: Noted: the dev server uses port 8123." in rendered
    assert "Tool call: Edit" in rendered and "Tool result: ok" in rendered
    for secret in ("hidden-chain-of-thought", "hidden-reasoning-key", "private-reasoning-message"):
        assert secret not in rendered


def test_flags_win_over_payload_target() -> None:
    event = decode_generic(fixture_bytes("generic_turn_end.json"), "pi", "turn_end")
    assert event.target == "pi"


def test_prompt_fallbacks_and_workspace_order() -> None:
    assert decode_generic('{"user_prompt": "a"}', "x", "user_input").prompt == "a"
    assert decode_generic('{"userPromptSubmit": {"prompt": "b"}}', "x", "user_input").prompt == "b"
    assert decode_generic('{"taskResume": {"task": "c"}}', "cline", "session_start").prompt == "c"
    event = decode_generic('{"current_dir": "/a", "workspace_roots": ["", "/b"]}', "x", "user_input")
    assert event.workspace == "/a"
    assert decode_generic('{"workspaceRoots": ["/b"]}', "x", "e").workspace == "/b"
    other = decode_generic('{"conversation_id": "c1", "text": "done"}', "x", "turn_end")
    # a bare ``text`` is not an assistant field generically (an integration may map it)
    assert other.metadata["session_id"] == "c1" and other.assistant == ""


def test_openai_tool_calls_and_nested_message() -> None:
    raw = {
        "messages": [
            {"message": {"role": "user", "content": "hi"}},
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "run", "arguments": '{"x": 1, "thought": "t"}'}}],
            },
        ]
    }
    event = decode_generic(json.dumps(raw), "x", "turn_end")
    assert [(m.role, m.text) for m in event.messages] == [("user", "hi"), ("tool_call", 'run {"x":1}')]


def test_bad_payloads_decode_to_empty_events() -> None:
    for raw in (b"", b"   ", b"not json", b"[1,2]", b"\xff\xfe\x00", b'"str"', b"{" * 5000):
        event = decode_generic(raw, "claude", "user_input")
        assert event.prompt == "" and event.messages == []
    assert parse_payload(b"{}" + b" " * (9 * 1024 * 1024)) == {}


def test_value_text_parses_json_strings() -> None:
    assert value_text('{"a": 1, "reasoning_content": "x"}') == '{"a":1}'
    assert value_text("  plain  ") == "plain"
    assert value_text({"type": "thinking", "thinking": "x"}) == ""


def test_duplicate_messages_are_dropped() -> None:
    raw = {"messages": [{"role": "user", "text": "same"}, {"role": "user", "text": " same "}]}
    assert len(decode_generic(json.dumps(raw), "x", "turn_end").messages) == 1


def test_native_event_names_are_left_to_integrations() -> None:
    # the core knows no harness's event names: the generic decoder keeps what it was given
    event = decode_generic(fixture_bytes("claude_stop.json"), "claude", "Stop")
    assert event.event == "Stop"
    assert decode_generic("{}", "x", "").event == "user_input"
    assert decode_generic('{"target": "t", "event": "turn_end"}', "", "").target == "t"


def test_pi_and_opencode_generated_payloads() -> None:
    pi = {
        "schema_version": "paxm.pi.turn_end.v1",
        "target": "pi",
        "event": "turn_end",
        "agent": "pi",
        "session_id": "2026-01-02T03-04-05_abc",
        "cwd": "/w",
        "workspace": "/w/repo",
        "source": "pi",
        "trigger_event": "agent_end",
        "messages": [{"role": "user", "text": "q", "source": "pi"}, {"role": "assistant", "text": "a", "source": "pi"}],
        "metadata": {"pi_event": "agent_end", "message_count": 2},
    }
    event = decode_generic(json.dumps(pi), "pi", "turn_end")
    assert event.workspace == "/w/repo" and event.metadata["session_id"] == "2026-01-02T03-04-05_abc"
    assert event.metadata["message_count"] == "2" and event.metadata["source"] == "pi"
    assert safe_text(event) == "pi turn messages:\nUser: q\nAssistant: a"
    oc = {
        "schema_version": "paxm.opencode.user_input.v1",
        "target": "opencode",
        "session_id": "s",
        "cwd": "/d",
        "prompt": "hi",
    }
    assert decode_generic(json.dumps(oc), "opencode", "user_input").prompt == "hi"
