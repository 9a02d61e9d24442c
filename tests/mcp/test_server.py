"""``paxm mcp serve`` driven by the official SDK's own stdio client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from paxm_core.mcp_server import TOOLS

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]

SQLITE_CONFIG = """\
version: 1
identity:
  user_id: alice
providers:
  sqlite:
    type: sqlite
    enabled: true
    path: {db}
agents:
  codex:
    enabled: true
    agent_id: codex-alice
"""


def write_config(path: Path, db: Path, *, extra: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SQLITE_CONFIG.format(db=db) + extra)
    return path


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "cfg" / "config.yaml", tmp_path / "data" / "memory.sqlite")


@asynccontextmanager
async def session(config: Path, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=PAXM[0], args=[*PAXM[1:], "--config", str(config), "mcp", "serve", *args], env=dict(os.environ)
    )
    with open(config.parent / "server-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            yield client


def run(config: Path, body: Callable[[ClientSession], Any], *args: str) -> Any:
    async def main() -> Any:
        async with session(config, *args) as client:
            return await body(client)

    return anyio.run(main)


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def test_initialize_and_list_tools(config: Path) -> None:
    async def body(client: ClientSession) -> Any:
        return await client.list_tools()

    async def main() -> tuple[Any, Any]:
        params = StdioServerParameters(
            command=PAXM[0], args=[*PAXM[1:], "--config", str(config), "mcp", "serve"], env=dict(os.environ)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            init = await client.initialize()
            return init, await client.list_tools()

    init, listing = anyio.run(main)
    assert init.server_info.name == "paxm" and init.server_info.title == "paxm memory"
    assert init.capabilities.tools is not None
    by_name = {tool.name: tool for tool in listing.tools}
    assert sorted(by_name) == ["paxm_config_doctor", "paxm_history", "paxm_recall", "paxm_remember"]
    recall = by_name["paxm_recall"].input_schema
    assert recall["additionalProperties"] is False and recall["required"] == ["query"]
    assert recall["properties"]["limit"] == {
        "type": "integer",
        "minimum": 1,
        "description": "Optional maximum number of memories to return.",
    }
    assert recall["properties"]["meta"]["additionalProperties"] == {"type": "string"}
    assert by_name["paxm_remember"].input_schema["required"] == ["text"]
    assert set(by_name["paxm_remember"].input_schema["properties"]) == {"text", "id", "profile", "source", "metadata"}
    assert by_name["paxm_history"].input_schema["properties"]["days"]["minimum"] == 1
    assert by_name["paxm_config_doctor"].input_schema == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    for name, tool in by_name.items():
        assert tool.input_schema == TOOLS[name][2]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name != "paxm_remember")


def test_remember_then_recall_with_trusted_identity(config: Path) -> None:
    async def body(client: ClientSession) -> Any:
        first = await client.call_tool("paxm_remember", {"text": "the staging database password rotates on fridays"})
        second = await client.call_tool(
            "paxm_remember",
            {"text": "deploys freeze on thursdays", "source": "notes", "metadata": {"topic": "ops"}, "id": "freeze"},
        )
        recalled = await client.call_tool(
            "paxm_recall", {"query": "when does the staging password rotate", "limit": 5, "format": "json"}
        )
        recalled_all = await client.call_tool("paxm_recall", {"query": "thursdays freeze deploys"})
        return first, second, recalled, recalled_all

    first, second, recalled, recalled_all = run(config, body, "--agent", "codex")
    assert not first.is_error and not second.is_error
    assert first.structured_content["refs"][0]["provider"] == "sqlite"
    assert json.loads(text_of(first)) == first.structured_content
    assert not recalled.is_error
    text = text_of(recalled)
    assert text.startswith('<paxm-recall version="1" mode="active">\n') and text.endswith("</paxm-recall>")
    inner = json.loads(text.split("\n", 1)[1].rsplit("\n", 1)[0])
    structured = recalled.structured_content
    assert structured["paxm_context"] == {"version": 1, "kind": "recall", "mode": "active"}
    assert "paxm_context" not in inner and inner["hits"] == structured["hits"]
    (hit,) = [h for h in structured["hits"] if "staging" in h["text"]]
    assert hit["source"] == "mcp"
    assert hit["origin"]["user_id"] == "alice" and hit["origin"]["agent_id"] == "codex-alice"
    assert hit["origin"]["session_id"].startswith("paxm-mcp-")
    assert hit["scope"] == {"type": "personal", "id": "alice"}
    (freeze,) = [h for h in recalled_all.structured_content["hits"] if "thursdays" in h["text"]]
    # the caller's source label is ignored: attribution is the runtime's
    assert freeze["source"] == "mcp" and freeze["metadata"]["topic"] == "ops"
    assert freeze["origin"]["session_id"] == hit["origin"]["session_id"]  # one session per server lifetime


def test_each_server_gets_its_own_session(config: Path) -> None:
    async def body(client: ClientSession) -> Any:
        await client.call_tool("paxm_remember", {"text": f"marker fact {os.getpid()} {id(client)}"})
        result = await client.call_tool("paxm_recall", {"query": "marker fact", "limit": 10})
        return {h["origin"]["session_id"] for h in result.structured_content["hits"]}

    first = run(config, body)
    both = run(config, body)
    assert len(first) == 1 and len(both) == 2 and first < both


def test_stm_profile_sets_expiry(config: Path) -> None:
    async def body(client: ClientSession) -> Any:
        await client.call_tool("paxm_remember", {"text": "working on the flaky login test", "profile": "stm"})
        return await client.call_tool("paxm_recall", {"query": "flaky login test"})

    result = run(config, body)
    (hit,) = result.structured_content["hits"]
    assert hit["tier"] == "stm" and hit["expires_at"]


BAD_CALLS: list[tuple[str, Any, str]] = [
    ("paxm_recall", {"query": "x", "bogus": 1}, "unknown argument 'bogus'"),
    ("paxm_recall", {}, "query is required"),
    ("paxm_recall", {"query": "   "}, "query is required"),
    ("paxm_recall", {"query": "x", "limit": 0}, "limit must be at least 1"),
    ("paxm_recall", {"query": "x", "limit": "3"}, "argument 'limit' must be an integer"),
    ("paxm_recall", {"query": "x", "limit": True}, "argument 'limit' must be an integer"),
    ("paxm_recall", {"query": 7}, "argument 'query' must be a string"),
    ("paxm_recall", {"query": "x", "meta": {"a": 1}}, "value of 'a' must be a string"),
    ("paxm_recall", {"query": "x", "profile": "nope"}, "nope"),
    ("paxm_remember", {"text": ""}, "text is required"),
    ("paxm_remember", {"text": "x", "profile": "nope"}, "nope"),
    ("paxm_remember", {"text": "x", "metadata": "flat"}, "argument 'metadata' must be an object"),
    ("paxm_history", {"days": 0}, "days must be at least 1"),
    ("paxm_config_doctor", {"verbose": True}, "unknown argument 'verbose'"),
]


def test_bad_arguments_are_tool_errors_and_the_server_survives(config: Path) -> None:
    async def body(client: ClientSession) -> Any:
        results = [await client.call_tool(name, args) for name, args, _ in BAD_CALLS]
        with pytest.raises(MCPError, match="unknown tool 'paxm_delete'") as info:
            await client.call_tool("paxm_delete", {})
        assert info.value.error.code == types.INVALID_PARAMS
        still = await client.call_tool("paxm_remember", {"text": "server still alive after bad calls"})
        return results, still

    results, still = run(config, body)
    for (name, args, message), result in zip(BAD_CALLS, results, strict=True):
        assert result.is_error, (name, args)
        assert message in result.structured_content["error"], (name, args, result.structured_content)
        assert json.loads(text_of(result)) == result.structured_content
    assert not still.is_error


def test_history_and_doctor(config: Path) -> None:
    async def body(client: ClientSession) -> Any:
        await client.call_tool("paxm_remember", {"text": "history counts this write"})
        await client.call_tool("paxm_recall", {"query": "history counts"})
        huge = await client.call_tool("paxm_history", {"days": 10**12})
        assert not huge.is_error and huge.structured_content["totals"]["events"] == 2
        return await client.call_tool("paxm_history", {"days": 1}), await client.call_tool("paxm_config_doctor", {})

    history, doctor = run(config, body)
    assert not history.is_error
    summary = history.structured_content
    assert summary["days"] == 1 and summary["totals"]["recalls"] == 1 and summary["totals"]["writes"] == 1
    assert summary["storage"]["events_file"] == str(config.parent / "state" / "events.jsonl")
    assert not doctor.is_error
    assert doctor.structured_content == {"statuses": [{"provider": "sqlite", "required": True, "ok": True}]}
    assert json.loads(text_of(doctor)) == [{"provider": "sqlite", "required": True, "ok": True}]


def test_broken_config_is_a_tool_error_and_a_fixed_one_is_reloaded(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg" / "config.yaml", tmp_path / "one.sqlite")

    async def body(client: ClientSession) -> Any:
        await client.call_tool("paxm_remember", {"text": "lives only in the first database"})
        config.write_text("version: [unclosed\n")
        broken = await client.call_tool("paxm_recall", {"query": "first database"})
        broken_doctor = await client.call_tool("paxm_config_doctor", {})
        write_config(config, tmp_path / "two.sqlite", extra="# switched\n")
        switched = await client.call_tool("paxm_recall", {"query": "first database"})
        return broken, broken_doctor, switched

    broken, broken_doctor, switched = run(config, body)
    assert broken.is_error and "invalid YAML" in broken.structured_content["error"]
    assert broken_doctor.is_error
    assert not switched.is_error and switched.structured_content["hits"] == []
    assert (tmp_path / "two.sqlite").exists()


def test_doctor_reports_an_unhealthy_required_provider(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "version: 1\nproviders:\n  broken:\n    type: jsonrpc\n    enabled: true\n"
        "    command: /nonexistent/paxm-provider\n"
        "recall_profiles:\n  default:\n    providers:\n      - name: broken\n        required: true\n"
        "write_profiles:\n  default:\n    providers:\n      - name: broken\n        required: true\n"
    )

    async def body(client: ClientSession) -> Any:
        return (
            await client.call_tool("paxm_config_doctor", {}),
            await client.call_tool("paxm_recall", {"query": "anything"}),
            await client.call_tool("paxm_remember", {"text": "anything"}),
        )

    doctor, recall, remember = run(config, body)
    assert doctor.is_error, doctor.structured_content
    assert doctor.structured_content["error"] == "required provider unhealthy: broken"
    (status,) = doctor.structured_content["result"]["statuses"]
    assert status["provider"] == "broken" and status["ok"] is False and status["error"]
    assert recall.is_error and text_of(recall).startswith('<paxm-recall version="1" mode="active">')
    assert recall.structured_content["paxm_context"] == {"version": 1, "kind": "recall", "mode": "active"}
    assert recall.structured_content["result"]["provider_errors"][0]["op"] == "search"
    assert remember.is_error and remember.structured_content["result"]["refs"] == []
    assert remember.structured_content["result"]["provider_errors"][0]["op"] == "put"


def paxm_cli(config: Path, *args: str) -> str:
    out = subprocess.run(
        [*PAXM, "--config", str(config), *args], capture_output=True, text=True, timeout=60, env=dict(os.environ)
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


SECRET = "the vault combination is 31-7-42"


def test_calls_show_up_in_logs_and_history_without_raw_text(config: Path) -> None:
    async def body(client: ClientSession) -> Any:
        await client.call_tool("paxm_remember", {"text": SECRET, "source": "notes"})
        await client.call_tool("paxm_recall", {"query": "what is the vault combination"})
        await client.call_tool("paxm_recall", {"query": "x", "profile": "missing"})

    run(config, body, "--agent", "codex")
    events = [json.loads(line) for line in paxm_cli(config, "logs", "--json").splitlines()]
    assert [(e["kind"], e["source"], e["success"]) for e in events] == [
        ("remember", "mcp", True),
        ("recall", "mcp", True),
        ("recall", "mcp", False),
    ]
    assert events[1]["hit_count"] == 1 and events[1]["query_length"] == len("what is the vault combination")
    assert events[0]["provider_writes"] == {"sqlite": 1} and events[0]["ref_count"] == 1
    summary = json.loads(paxm_cli(config, "history", "--json", "--days", "1"))
    assert summary["totals"]["events"] == 3 and summary["totals"]["errors"] == 1
    assert summary["totals"]["recalls"] == 2 and summary["totals"]["writes"] == 1
    state = config.parent / "state"
    logged = (state / "events.jsonl").read_text() + (state / "metrics.json").read_text()
    assert "vault" not in logged and "31-7-42" not in logged
