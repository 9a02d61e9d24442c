"""Issue 43 item 12: ``paxm_recall`` answers an agent with compact text (memory, project, age, id)
and keeps the full result as ``structuredContent`` (or as JSON text with ``format: json``); tool
descriptions say what each tool is for.  Driven by the MCP SDK's own client over stdio."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.client.session import ClientSession

from paxm_core.api.types import MemoryHit
from paxm_core.envelope import unguard_memory_text
from paxm_core.router.policy import RecallResult

from .test_server import config, run, text_of  # noqa: F401  (config is a fixture)

FACT = "We deploy the billing service with blue-green releases on Tuesdays"


def test_recall_text_is_compact_and_the_structured_result_is_whole(config: Path) -> None:  # noqa: F811
    async def body(client: ClientSession) -> Any:
        stored = await client.call_tool("paxm_remember", {"text": FACT})
        compact = await client.call_tool("paxm_recall", {"query": "how do we deploy billing"})
        full = await client.call_tool("paxm_recall", {"query": "how do we deploy billing", "format": "json"})
        bad = await client.call_tool("paxm_recall", {"query": "x", "format": "yaml"})
        return stored, compact, full, bad

    stored, compact, full, bad = run(config, body, "--agent", "codex")
    ref = stored.structured_content["refs"][0]
    text = text_of(compact)
    lines = text.splitlines()
    assert lines[0] == '<paxm-recall version="1" mode="active">' and lines[-1] == "</paxm-recall>"
    assert re.fullmatch(
        rf"### Memory 1 \(id sqlite/{re.escape(ref['id'])}; project /\S+; stored just now; source mcp\)", lines[1]
    ), lines[1]
    assert lines[2] == FACT and len(lines) == 4
    # what made the old answer ~1.5 KB for one short memory is gone from the text ...
    for noise in ("alice", "codex-alice", "paxm-mcp-", "fingerprint", "sequence", "relevance", '"', "{"):
        assert noise not in "\n".join(lines[1:-1]), noise
    project = lines[1].split("; project ", 1)[1].split(";", 1)[0]
    # the memory, its id and project path (as long as the checkout's), and ~125 characters of envelope and labels
    assert len(text) < len(FACT) + len(ref["id"]) + len(project) + 150
    # ... and still there for a client that reads structured content
    (hit,) = compact.structured_content["hits"]
    assert hit["id"] == ref["id"] and hit["origin"]["agent_id"] == "codex-alice"
    assert compact.structured_content["paxm_context"] == {"version": 1, "kind": "recall", "mode": "active"}
    # format=json: the RecallResult as JSON text, as before
    inner = json.loads(text_of(full).split("\n", 1)[1].rsplit("\n", 1)[0])
    assert inner["hits"] == full.structured_content["hits"]
    assert bad.is_error and "format" in text_of(bad)


def test_no_memories_is_said_in_the_envelope(config: Path) -> None:  # noqa: F811
    async def body(client: ClientSession) -> Any:
        return await client.call_tool("paxm_recall", {"query": "zebra paperwork"})

    out = run(config, body)
    assert text_of(out) == '<paxm-recall version="1" mode="active">\nNo memories found.\n</paxm-recall>'
    assert out.structured_content["hits"] == []


def test_tool_descriptions_say_when_an_agent_uses_them(config: Path) -> None:  # noqa: F811
    async def body(client: ClientSession) -> Any:
        return await client.list_tools()

    tools = {tool.name: tool for tool in run(config, body).tools}
    recall = tools["paxm_recall"].description or ""
    assert "before answering" in recall and "this project" in recall
    assert "later session" in (tools["paxm_remember"].description or "")
    assert "fails" in (tools["paxm_config_doctor"].description or "")
    assert tools["paxm_recall"].input_schema["properties"]["format"]["enum"] == ["text", "json"]


_TEXT = st.lists(
    st.one_of(
        st.sampled_from(["\n### Memory 2 (id sqlite/x)\n", "</paxm-recall>", "#", "\n", "\u2028", "; project /"]),
        st.text(max_size=10),
    ),
    max_size=6,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXT.filter(str.strip), min_size=1, max_size=4), st.lists(_TEXT, min_size=4, max_size=4))
def test_compact_text_cannot_be_forged_by_memory_text(texts: list[str], fields: list[str]) -> None:
    from paxm_core.envelope import render_recall_compact

    hits = [
        MemoryHit("sqlite", f"id{i}", text, source=field, metadata={"workspace": field})
        for i, (text, field) in enumerate(zip(texts, fields, strict=False))
    ]
    rendered = render_recall_compact(RecallResult("q", hits))
    assert len(re.findall(r"<\s*/?\s*paxm", rendered, re.IGNORECASE)) == 2
    heads = re.findall(r"(?m)^### Memory (\d+) ", rendered)
    assert heads == [str(n) for n in range(1, len(hits) + 1)]
    bodies = re.split(r"(?m)^### Memory \d+ [^\n]*\n", rendered.split("\n", 1)[1].rsplit("\n", 1)[0])[1:]
    norm = [unguard_memory_text(b).rstrip("\n").replace("&lt;", "<").replace("&gt;", ">") for b in bodies]
    assert norm == [t.strip().replace("&lt;", "<").replace("&gt;", ">") for t in texts]
