"""Issue 43 item 6: the dashboard's memory search follows the project rule and shows each hit's project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _dashboard_helpers import _env, start_dashboard, stop_dashboard

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def _remember(config: Path, cwd: Path, *args: str) -> None:
    done = subprocess.run(
        [*PAXM, "--config", str(config), "remember", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=_env(config.parent / "home"),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_memory_search_by_project(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    (tmp_path / "home").mkdir(exist_ok=True)
    config.write_text(
        f"version: 1\nproviders:\n  sqlite:\n    type: sqlite\n    enabled: true\n    path: {tmp_path}/m.db\n"
    )
    billing, ingest = tmp_path / "billing", tmp_path / "ingest"
    for repo in (billing, ingest):
        (repo / ".git").mkdir(parents=True)
        (repo / "src").mkdir()
    _remember(config, billing, "The release train leaves on Tuesdays for billing")
    _remember(config, ingest / "src", "The release train leaves on Fridays for ingest")
    _remember(config, ingest, "--global", "The release train leaves late on holidays")
    dashboard = start_dashboard(config)
    try:
        every = dashboard.get("/api/memories", params={"q": "release train leaves"}).json()
        scoped = dashboard.get("/api/memories", params={"q": "release train leaves", "project": str(billing / "src")})
        assert scoped.status_code == 200, scoped.text
        page = dashboard.get("/").text + dashboard.get("/static/app.js").text
    finally:
        stop_dashboard(dashboard)
    assert every["project"] == "", every
    assert len(every["hits"]) == 3, every["hits"]
    assert {h["project"] for h in every["hits"]} == {str(billing), str(ingest), ""}
    only = scoped.json()
    assert only["project"] == str(billing)  # a directory inside the repository means the repository
    assert sorted(h["text"] for h in only["hits"]) == [
        "The release train leaves late on holidays",
        "The release train leaves on Tuesdays for billing",
    ]
    assert all(h["project"] == h.get("metadata", {}).get("workspace", "") for h in only["hits"])
    assert "project: st.project" in page  # the page sends the project field
