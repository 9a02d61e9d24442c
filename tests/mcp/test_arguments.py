"""Strict tool-argument checking and import lightness of the MCP module (in-process, fast)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.mcp_server import TOOLS, PaxmTools, ToolArgumentError, UnknownToolError, validate_arguments

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
known_keys = st.sampled_from(["query", "profile", "limit", "meta", "text", "id", "source", "metadata", "days", "x"])


def conforms(schema: dict[str, Any], args: dict[str, Any]) -> bool:
    props = schema["properties"]
    for key, value in args.items():
        spec = props[key]
        if spec["type"] == "string":
            assert isinstance(value, str)
        elif spec["type"] == "integer":
            assert isinstance(value, int) and not isinstance(value, bool) and value >= spec["minimum"]
        else:
            assert isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    return all(key in args for key in schema.get("required", []))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(TOOLS)), st.dictionaries(known_keys, json_values, max_size=4) | json_values)
def test_validation_accepts_only_schema_conforming_arguments(tool: str, arguments: Any) -> None:
    schema = TOOLS[tool][2]
    try:
        checked = validate_arguments(schema, arguments)
    except ToolArgumentError as exc:
        assert str(exc)
        return
    assert conforms(schema, checked)
    assert set(checked) <= set(schema["properties"])


def test_every_schema_is_closed_and_json() -> None:
    for _name, (title, description, schema, _read_only) in TOOLS.items():
        assert title and description
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert json.loads(json.dumps(schema)) == schema


def test_unknown_tool_raises_and_failures_do_not(tmp_path: Any) -> None:
    tools = PaxmTools(str(tmp_path / "config.yaml"))
    with pytest.raises(UnknownToolError):
        tools.call("paxm_delete_everything", {})

    def explode(_: str | None) -> Any:
        raise RuntimeError("provider exploded")

    broken = PaxmTools(str(tmp_path / "config.yaml"), runtime_factory=explode)
    outcome = broken.call("paxm_recall", {"query": "anything"})
    assert outcome.is_error and outcome.structured == {"error": "internal error: RuntimeError: provider exploded"}
    assert broken.session_id.startswith("paxm-mcp-") and broken.session_id != tools.session_id


@pytest.mark.parametrize(
    "module",
    [
        "paxm_core.mcp_server",
        "paxm_core.mcp_stdio",
        "paxm_core.telemetry",
        "paxm_core.telemetry.render",
        "paxm_core.cli.mcp_cmds",
    ],
)
def test_modules_do_not_import_the_sdk(module: str) -> None:
    code = f"import sys, json, {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert not loaded & {"mcp", "mcp_types", "pydantic", "anyio", "starlette", "yaml"}


def test_cli_wiring() -> None:
    code = "from paxm_core.cli import main; main()"
    listing = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, timeout=60)
    for name in ("mcp", "history", "logs"):
        assert f"  {name} " in listing.stdout, listing.stdout
    serve_help = subprocess.run(
        [sys.executable, "-c", code, "mcp", "serve", "--help"], capture_output=True, text=True, timeout=60
    )
    assert serve_help.returncode == 0 and "--agent NAME" in serve_help.stdout
