"""Item 1 of issue 20: one project identity (subdirectories and worktrees) on every path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _hooks import flush, memories, run_client, write_config

from paxm_core.mcp_server import PaxmTools
from paxm_core.workspace import project_root, resolve_workspace, workspace_mode

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def git_common_top(cwd: Path) -> str:
    """What git itself says: the parent of ``--git-common-dir``."""
    out = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return str(Path(out.stdout.strip()).parent)


def test_project_root_matches_git_for_subdirectories_and_worktrees(repo: dict[str, Path]) -> None:
    main = str(repo["main"])
    for key in ("main", "src", "wt", "wt_pkg"):
        assert resolve_workspace(repo[key]) == main, key
        assert git_common_top(repo[key]) == main, key
    assert resolve_workspace(repo["src"], mode="directory") == str(repo["src"])
    assert resolve_workspace(str(repo["src"]) + "/") == main
    # outside any repository the directory is the workspace
    assert project_root(str(repo["outside"])) == ""
    assert resolve_workspace(repo["outside"]) == str(repo["outside"])
    with workspace_mode("directory"):
        assert resolve_workspace(repo["wt_pkg"]) == str(repo["wt_pkg"])
    assert resolve_workspace(repo["wt_pkg"]) == main


def test_submodule_style_gitdir_file_is_its_own_project(tmp_path: Path) -> None:
    sub = tmp_path / "outer" / "sub"
    gitdir = tmp_path / "outer" / ".git" / "modules" / "sub"
    gitdir.mkdir(parents=True)
    sub.mkdir()
    (sub / ".git").write_text(f"gitdir: {gitdir}\n")
    assert resolve_workspace(sub / "") == str(sub)
    (sub / "x").mkdir()
    assert resolve_workspace(sub / "x") == str(sub)


def _remember_in(config: Path, directory: Path, text: str) -> None:
    tools = PaxmTools(str(config), agent_name="codex", workspace=str(directory))
    try:
        out = tools.call("paxm_remember", {"text": text})
        assert not out.is_error, out.structured
    finally:
        tools.close()


def _recall_in(config: Path, directory: Path, query: str) -> list[str]:
    tools = PaxmTools(str(config), agent_name="codex", workspace=str(directory))
    try:
        out = tools.call("paxm_recall", {"query": query, "limit": 20})
        assert not out.is_error, out.structured
        return [h["text"] for h in out.structured["hits"]]
    finally:
        tools.close()


def _cli_recall(config: Path, cwd: Path, query: str) -> list[str]:
    out = subprocess.run(
        [*PAXM, "--config", str(config), "recall", "--query", query, "--json"],
        cwd=cwd,
        capture_output=True,
        timeout=60,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return [h["text"] for h in json.loads(out.stdout)["hits"]]


def test_mcp_and_cli_share_memory_across_subdirectories_and_worktrees(repo: dict[str, Path], tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    _remember_in(config, repo["wt_pkg"], "Decision: the release branch is cut on Thursdays, id plum-5521")
    stored = [m for m in memories(config) if "plum-5521" in m["text"]]
    assert json.loads(stored[0]["metadata_json"])["workspace"] == str(repo["main"])
    for where in ("main", "src", "wt"):
        assert any("plum-5521" in t for t in _recall_in(config, repo[where], "release branch thursdays plum-5521"))
        assert any("plum-5521" in t for t in _cli_recall(config, repo[where], "release branch thursdays plum-5521"))
    # another project does not see it
    assert not any("plum-5521" in t for t in _recall_in(config, repo["outside"], "release branch plum-5521"))


def test_memories_stored_under_the_exact_directory_rule_stay_visible(repo: dict[str, Path], tmp_path: Path) -> None:
    def mode(name: str) -> object:
        def mutate(cfg: object) -> None:
            cfg.workspace.mode = name  # type: ignore[attr-defined]

        return mutate

    old = write_config(tmp_path / "old", mutate=mode("directory"))
    _remember_in(old, repo["src"], "Legacy note: the schema lives in db/schema.sql, id fig-7304")
    stored = [m for m in memories(old) if "fig-7304" in m["text"]]
    assert json.loads(stored[0]["metadata_json"])["workspace"] == str(repo["src"])
    # the same store under the default (project) mode: found from the root, a sibling and a worktree
    new = write_config(tmp_path / "new", mutate=mode("project"))
    new.with_name("memory.sqlite").unlink(missing_ok=True)
    new.write_text(
        new.read_text().replace(str(tmp_path / "new" / "memory.sqlite"), str(tmp_path / "old" / "memory.sqlite"))
    )
    for where in ("main", "wt_pkg"):
        assert any("fig-7304" in t for t in _cli_recall(new, repo[where], "schema fig-7304"))
    # a sibling directory whose name merely starts with the same characters is another project
    sibling = repo["main"].parent / (repo["main"].name + "-other")
    sibling.mkdir()
    assert not any("fig-7304" in t for t in _cli_recall(new, sibling, "schema fig-7304"))
    # directory mode: the directory and those below it, never a worktree or a sibling
    assert any("fig-7304" in t for t in _cli_recall(old, repo["src"], "schema fig-7304"))
    assert not any("fig-7304" in t for t in _cli_recall(old, repo["wt"], "schema fig-7304"))


def test_hook_path_shares_memory_across_worktrees(
    repo: dict[str, Path], tmp_path: Path, daemon_cleanup: list[Path]
) -> None:
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    prompt = {"session_id": "w1", "cwd": str(repo["src"]), "prompt": "Decision: lint runs with ruff, id pear-8812"}
    assert run_client(config, "claude", "user_input", json.dumps(prompt).encode()).returncode == 0
    stop = {"session_id": "w1", "cwd": str(repo["src"]), "last_assistant_message": "Noted pear-8812."}
    assert run_client(config, "claude", "turn_end", json.dumps(stop).encode()).returncode == 0
    flush(config)
    rows = [json.loads(m["metadata_json"]) for m in memories(config) if "pear-8812" in m["text"]]
    # the daemon resolved the payload's cwd (a subdirectory) to the project root
    assert rows and all(f"/workspace/{repo['main']}/session/" in m["paxm_session_key"] for m in rows), rows
    ask = {"session_id": "w2", "cwd": str(repo["wt_pkg"]), "prompt": "which linter do we run pear-8812"}
    answer = run_client(config, "claude", "user_input", json.dumps(ask).encode())
    assert answer.returncode == 0 and b"pear-8812" in answer.stdout
