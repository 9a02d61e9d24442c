"""Issue 43 item 6: one project rule on every path, the project shown, other projects named.

A memory belongs to the project it was written in (CLI, MCP and hooks alike); a recall sees its
project's memories and those of no project; when it finds fewer than asked, the CLI says how many
matches other projects hold and how to see them (``--all-projects``, ``--project PATH``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.api.types import MemoryHit
from paxm_core.config import load_config
from paxm_core.mcp_server import PaxmTools
from paxm_core.router.policy import RecallResult
from paxm_core.tools import Tools

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]
FACT = "The billing service deploys on Tuesdays after the freeze review"


def paxm(config: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAXM_")}
    return subprocess.run(
        [*PAXM, "--config", str(config), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60
    )


def _projects(tmp_path: Path) -> tuple[Path, Path, Path]:
    billing, ingest = tmp_path / "billing", tmp_path / "ingest"
    for repo in (billing, ingest):
        (repo / ".git").mkdir(parents=True)  # a git repository: the project is its top level
        (repo / "src").mkdir()
    return tmp_path / "config.yaml", billing, ingest


def test_cli_memory_belongs_to_its_project_and_other_projects_are_named(tmp_path: Path) -> None:
    config, billing, ingest = _projects(tmp_path)
    stored = paxm(config, billing / "src", "remember", "--text", FACT)
    assert stored.returncode == 0, stored.stderr

    here = paxm(config, billing, "recall", "-q", "when does billing deploy")
    assert FACT in here.stdout and f"Project: {billing}\n" in here.stdout

    there = paxm(config, ingest, "recall", "-q", "when does billing deploy")
    assert there.returncode == 0, there.stderr
    assert there.stdout == "No memories found.\n"
    assert f"1 match in other projects: {billing} (1)" in there.stderr
    assert "--all-projects" in there.stderr and "--project PATH" in there.stderr

    everywhere = paxm(config, ingest, "recall", "-q", "when does billing deploy", "--all-projects")
    assert FACT in everywhere.stdout and f"Project: {billing}\n" in everywhere.stdout and not everywhere.stderr
    chosen = paxm(config, ingest, "recall", "-q", "when does billing deploy", "--project", str(billing / "src"))
    assert FACT in chosen.stdout

    data = json.loads(paxm(config, ingest, "recall", "-q", "when does billing deploy", "--json").stdout)
    assert data["hits"] == [] and data["project"] == str(ingest)
    assert data["other_projects"] == [{"project": str(billing), "matches": 1}]
    assert data["paxm_context"] == {"version": 1, "kind": "recall", "mode": "active"}


def test_global_memories_are_seen_from_every_project(tmp_path: Path) -> None:
    config, billing, ingest = _projects(tmp_path)
    assert paxm(config, billing, "remember", "--global", "I prefer pnpm over npm").returncode == 0
    found = paxm(config, ingest, "recall", "-q", "pnpm or npm")
    assert "I prefer pnpm over npm" in found.stdout and "Project: (none: every project sees it)" in found.stdout
    both = paxm(config, billing, "remember", "--global", "--project", str(ingest), "x")
    assert both.returncode == 1 and "exclude each other" in both.stderr


def test_mcp_and_cli_follow_the_same_rule(tmp_path: Path) -> None:
    config, billing, ingest = _projects(tmp_path)
    agent = PaxmTools(str(config), workspace=str(billing / "src"))
    try:
        assert not agent.call("paxm_remember", {"text": FACT}).is_error
    finally:
        agent.close()
    # the CLI in the same project sees the agent's memory, another project is told where it is
    assert FACT in paxm(config, billing, "recall", "-q", "billing deploy").stdout
    other = paxm(config, ingest, "recall", "-q", "billing deploy")
    assert other.stdout == "No memories found.\n" and str(billing) in other.stderr
    # and an agent in the other project stays in its project: no hit, no hint about the first one
    elsewhere = PaxmTools(str(config), workspace=str(ingest))
    try:
        out = elsewhere.call("paxm_recall", {"query": "billing deploy"})
    finally:
        elsewhere.close()
    assert out.structured["hits"] == [] and str(billing) not in out.text


class _Unfiltered:
    """A router over a provider that stores the workspace but does not filter on it."""

    def __init__(self, hits: list[MemoryHit]) -> None:
        self.hits = hits

    def search(self, query: Any, policy: Any, deadline: Any) -> RecallResult:
        self.budget = deadline.remaining()
        return RecallResult(query.text, list(self.hits))


def test_the_core_applies_the_rule_to_any_provider(tmp_path: Path) -> None:
    hits = [
        MemoryHit("remote", "a", "alpha", metadata={"workspace": "/w/billing"}),
        MemoryHit("remote", "b", "beta", metadata={"workspace": "/w/ingest"}),
        MemoryHit("remote", "c", "gamma"),
        MemoryHit("remote", "d", "delta", metadata={"workspace": "/w/billing/src"}),
    ]
    tools = Tools(load_config(tmp_path / "none.yaml"), _Unfiltered(hits))  # type: ignore[arg-type]
    seen = tools.recall("anything", workspace="/w/billing")
    assert [h.id for h in seen.hits] == ["a", "c", "d"]
    assert [h.id for h in tools.recall("anything").hits] == ["a", "b", "c", "d"]
    assert tools.elsewhere("anything", workspace="/w/billing", limit=10, shown=3) == [("/w/ingest", 1)]
    assert tools.elsewhere("anything", workspace="/w/billing", limit=3, shown=3) == []  # a full page: no hint
    assert tools.elsewhere("anything", workspace="", shown=0) == []
    tools.elsewhere("anything", workspace="/w/billing")
    assert tools.router.budget <= 1.0  # type: ignore[attr-defined]  # the hint adds a second at most


_SEGMENT = st.text(alphabet="ab0/.-", min_size=0, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(_SEGMENT, min_size=1, max_size=3).map("/".join), st.lists(_SEGMENT, max_size=3).map("/".join))
def test_visible_is_the_sqlite_providers_filter(scope: str, project: str) -> None:
    """The core's rule and the SQLite provider's SQL agree on every pair of paths."""
    from paxm_core.workspace import visible
    from paxm_provider_sqlite.retrieval.model import Request
    from paxm_provider_sqlite.retrieval.search import filter_clause

    scope = "/" + scope
    where, args = filter_clause(Request(text="x", workspace=scope))
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE memories (expires_at TEXT, tier TEXT, metadata_json TEXT)")
    conn.execute("INSERT INTO memories VALUES ('', 'ltm', ?)", (json.dumps({"workspace": project}),))
    (count,) = conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", args).fetchone()
    assert bool(count) == visible(project.strip(), scope)


def _passive_helpers() -> Any:
    """The passive suite's helpers (real hook client, daemon control), loaded by path."""
    from tests._kit import load_module

    passive = Path(__file__).parents[1] / "passive" / "conftest.py"
    return load_module("paxm_tests_passive_helpers", passive, register=True)


def test_hook_captures_follow_the_same_rule(tmp_path: Path) -> None:
    from paxm_core.passive.control import send_control

    helpers = _passive_helpers()
    _, billing, ingest = _projects(tmp_path)
    config = helpers.write_config(tmp_path / "cfg")
    try:
        base = {"session_id": "s1", "cwd": str(billing / "src")}
        prompt = {**base, "prompt": "Decision: billing lints with ruff, ticket pear-8812"}
        assert helpers.run_client(config, "claude", "user_input", json.dumps(prompt).encode()).returncode == 0
        stop = {**base, "last_assistant_message": "Noted: ruff for pear-8812."}
        assert helpers.run_client(config, "claude", "turn_end", json.dumps(stop).encode()).returncode == 0
        helpers.wait_for(lambda: config.parent.joinpath("hooks", "paxm-hook.sock").exists())
        report = send_control(config, "flush", params={"seal_open": True})
        assert report is not None and report["ok"], report
    finally:
        helpers.stop_daemon(config)
    here = paxm(config, billing, "recall", "-q", "pear-8812 ruff")
    assert "pear-8812" in here.stdout and f"Project: {billing}\n" in here.stdout
    there = paxm(config, ingest, "recall", "-q", "pear-8812 ruff")
    assert there.stdout == "No memories found.\n" and f"in other projects: {billing} (" in there.stderr
