"""``paxm_contracttest.fake_models``: each fake API answers the way the real harnesses need."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from paxm_contracttest.fake_models import FakeAnthropic, FakeOpenAI, FakeResponses


def _post(url: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(response.headers.get("Content-Type")), response.read()


def test_anthropic_messages_json_and_stream_with_marker(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    with FakeAnthropic(log, marker="plum-7") as fake:
        assert fake.url.startswith("http://127.0.0.1:") and not fake.url.endswith("/v1")
        kind, data = _post(
            fake.url + "/v1/messages", {"model": "m", "messages": [{"role": "user", "content": "plum-7"}]}
        )
        assert kind == "application/json"
        assert json.loads(data)["content"][0]["text"].endswith("[marker-seen]")
        kind, data = _post(fake.url + "/v1/messages", {"stream": True, "messages": [{"role": "user", "content": "x"}]})
        assert kind == "text/event-stream" and b"[marker-absent]" in data and b"event: message_stop" in data
        _post(fake.url + "/v1/messages/count_tokens", {"messages": []})
        assert len(fake.messages()) == 2 and len(fake.requests) == 3
    assert len(log.read_text().splitlines()) == 3


def test_anthropic_tool_mode_then_text(tmp_path: Path) -> None:
    call = ("Bash", {"command": "cat a.py"})
    with FakeAnthropic(tmp_path / "a.jsonl", tool_call=call) as fake:
        tools = [{"name": "Bash", "input_schema": {}}]
        ask: dict[str, Any] = {"tools": tools, "messages": [{"role": "user", "content": "RUN_TOOL now"}]}
        block = json.loads(_post(fake.url + "/v1/messages", ask)[1])["content"][0]
        assert block["type"] == "tool_use" and (block["name"], block["input"]) == call
        _, data = _post(fake.url + "/v1/messages", {**ask, "stream": True})
        assert b'"stop_reason": "tool_use"' in data and b"input_json_delta" in data
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}
        ask["messages"].append(result)
        text = json.loads(_post(fake.url + "/v1/messages", ask)[1])["content"][0]
        assert text["type"] == "text" and text["text"].startswith("Noted")
        # no trigger, or the tool not offered: a text reply
        plain = {"tools": [{"name": "Read"}], "messages": [{"role": "user", "content": "RUN_TOOL"}]}
        assert json.loads(_post(fake.url + "/v1/messages", plain)[1])["content"][0]["type"] == "text"


def test_chat_completions_tool_mode_then_text(tmp_path: Path) -> None:
    with FakeOpenAI(tmp_path / "o.jsonl") as fake:
        assert fake.url.endswith("/v1")
        tools = [{"type": "function", "function": {"name": "bash"}}]
        ask = {"tools": tools, "messages": [{"role": "user", "content": "please RUN_TOOL"}]}
        _, data = _post(fake.url + "/chat/completions", ask)
        call = json.loads(data)["choices"][0]["message"]["tool_calls"][0]
        assert call["function"]["name"] == "bash" and "TOOL_RAN_OK" in call["function"]["arguments"]
        ask["messages"].append({"role": "tool", "content": "TOOL_RAN_OK"})
        _, data = _post(fake.url + "/chat/completions", {**ask, "stream": True})
        assert b"Noted, I will remember that." in data and data.endswith(b"data: [DONE]\n\n")
        assert [r.has_tool_result for r in fake.agent_steps()] == [False, True]
        assert fake.agent_steps()[0].user_text() == "please RUN_TOOL"


def test_responses_function_call_for_the_users_trigger(tmp_path: Path) -> None:
    with FakeResponses(tmp_path / "r.jsonl", marker="m-1") as fake:
        tool = {"type": "function", "name": "exec_command", "parameters": {"properties": {"cmd": {}}}}
        ask = {"stream": True, "tools": [tool], "input": [{"role": "user", "content": "RUN_TOOL m-1"}]}
        _, data = _post(fake.url + "/responses", ask)
        assert b"function_call" in data and b"echo TOOL_RAN_OK" in data
        _, data = _post(fake.url + "/responses", {"input": [{"role": "user", "content": "hello"}]})
        assert b"[marker-absent]" in data
        assert len(fake.responses()) == 2
