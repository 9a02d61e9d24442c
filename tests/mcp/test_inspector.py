"""The official MCP Inspector CLI against ``paxm mcp serve``.

The pinned Inspector is installed once into the shared npm test cache by the flock-guarded
installer every real-harness suite uses (``.ci/run`` warms it while earlier suites run).
The test is skipped only when npm itself is missing; a failed install fails it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest.harness import require

INSPECTOR_VERSION = "2.12.0"
PAXM_SERVE = [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def install_inspector() -> Path:
    """The pinned ``mcp-inspector`` executable, installed once into the shared npm test cache."""
    from paxm_contracttest.harness import npm_install

    root = npm_install("@modelcontextprotocol/inspector", INSPECTOR_VERSION)
    manifest = root / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
    assert json.loads(manifest.read_text())["version"] == INSPECTOR_VERSION
    return root / "node_modules" / ".bin" / "mcp-inspector"


@pytest.fixture(scope="session")
def inspector() -> Path:
    if shutil.which("npm") is None or shutil.which("node") is None:
        require("npm/node not installed: cannot run the MCP Inspector CLI (apt-get install nodejs npm)")
    binary = install_inspector()
    assert binary.exists()
    return binary


def inspect(inspector: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # "--" keeps the server's own --config away from the Inspector's --config option.
    command = [str(inspector), "--cli", *args, "--", *PAXM_SERVE, "--config", str(config), "mcp", "serve"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=dict(os.environ))


def call_tool(inspector: Path, config: Path, tool: str, *args: str) -> Any:
    """The JSON result of ``tools/call`` of ``tool`` with ``args`` (``name=value``), which must succeed."""
    done = inspect(inspector, config, "--method", "tools/call", "--tool-name", tool, "--tool-arg", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_inspector_lists_tools_and_round_trips(inspector: Path, tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text(
        f"version: 1\nproviders:\n  sqlite:\n    type: sqlite\n    enabled: true\n    path: {tmp_path / 'm.sqlite'}\n"
    )

    listed = inspect(inspector, config, "--method", "tools/list", "--strict")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    tools = {tool["name"]: tool for tool in json.loads(listed.stdout)["tools"]}
    assert sorted(tools) == ["paxm_config_doctor", "paxm_history", "paxm_recall", "paxm_remember"]
    assert all(tool["inputSchema"]["additionalProperties"] is False for tool in tools.values())

    text = "text=the inspector remembers the blue heron"
    remembered = call_tool(inspector, config, "paxm_remember", text, "profile=ltm")
    assert remembered["isError"] is False and remembered["structuredContent"]["refs"][0]["provider"] == "sqlite"

    recalled = call_tool(inspector, config, "paxm_recall", "query=blue heron", "limit=3")
    assert recalled["isError"] is False
    assert recalled["content"][0]["text"].startswith('<paxm-recall version="1" mode="active">')
    hits = recalled["structuredContent"]["hits"]
    assert [hit["text"] for hit in hits] == ["the inspector remembers the blue heron"]
    assert hits[0]["id"] == remembered["structuredContent"]["refs"][0]["id"]

    rejected = inspect(
        inspector, config, "--method", "tools/call", "--tool-name", "paxm_recall", "--tool-arg", "query=x", "bogus=1"
    )
    assert rejected.returncode != 0 and json.loads(rejected.stdout.split("\n}")[0] + "\n}")["isError"] is True
