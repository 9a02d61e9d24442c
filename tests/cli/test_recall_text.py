"""Issue 43 item 7: recall's text shows the id ``forget`` takes and no meaningless raw score;
``remember "text"`` and ``recall "query"`` work; ``paxm help [COMMAND]...`` works."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from paxm_core.api.types import MemoryHit
from paxm_core.envelope import render_recall_text
from paxm_core.router.policy import RecallResult

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def paxm(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAXM_")}
    return subprocess.run(
        [*PAXM, "--config", str(tmp_path / "config.yaml"), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_the_id_recall_prints_is_the_one_forget_takes(tmp_path: Path) -> None:
    assert paxm(tmp_path, "remember", "--text", "The staging database is db-stg-2").returncode == 0
    shown = paxm(tmp_path, "recall", "-q", "staging database")
    match = re.search(r"^Id: (\S+)$", shown.stdout, re.MULTILINE)
    assert match, shown.stdout
    forgot = paxm(tmp_path, "forget", match.group(1), "--yes")
    assert forgot.returncode == 0, forgot.stdout + forgot.stderr
    assert paxm(tmp_path, "recall", "-q", "staging database").stdout == "No memories found.\n"


def test_backend_scores_only_with_verbose(tmp_path: Path) -> None:
    assert paxm(tmp_path, "remember", "--text", "We deploy with blue-green releases").returncode == 0
    plain = paxm(tmp_path, "recall", "-q", "blue-green releases")
    assert "Score: " in plain.stdout and "Raw score" not in plain.stdout and "Relevance" not in plain.stdout
    verbose = paxm(tmp_path, "recall", "-q", "blue-green releases", "--verbose")
    assert "Raw score: " in verbose.stdout and "Relevance: " in verbose.stdout


def test_rendered_hit_layout() -> None:
    hit = MemoryHit("sqlite", "ltm_1", "use pnpm", score=1.0, relevance=1.0, raw_score=0.0, source="cli")
    hit.metadata["workspace"] = "/w/app"
    text = render_recall_text(RecallResult("q", [hit]))
    assert "### Memory 1 (sqlite)\nId: sqlite/ltm_1\nProject: /w/app\nScope: unknown\nScore: 1.0000\n" in text
    assert "Raw score" not in text
    assert "Raw score: 0.0000" in render_recall_text(RecallResult("q", [hit]), verbose=True)


def test_remember_takes_the_text_as_arguments(tmp_path: Path) -> None:
    quoted = paxm(tmp_path, "remember", "Release branches are named release/v2")
    assert quoted.returncode == 0 and quoted.stdout.startswith("stored memory: sqlite/"), quoted.stderr
    words = paxm(tmp_path, "remember", "CI", "runs", "on", "Buildkite")
    assert words.returncode == 0, words.stderr
    found = paxm(tmp_path, "recall", "-q", "release branches named")
    assert "Release branches are named release/v2" in found.stdout
    assert "CI runs on Buildkite" in paxm(tmp_path, "recall", "-q", "Buildkite").stdout
    twice = paxm(tmp_path, "remember", "a", "--text", "b")
    assert twice.returncode == 1 and "give the memory text once" in twice.stderr
    none = paxm(tmp_path, "remember")
    assert none.returncode == 1 and 'paxm remember "TEXT"' in none.stderr


def test_recall_takes_the_query_as_arguments(tmp_path: Path) -> None:
    assert paxm(tmp_path, "remember", "Release branches are named release/v2").returncode == 0
    flag = paxm(tmp_path, "recall", "--query", "release branches named", "--json")
    words = paxm(tmp_path, "recall", "release", "branches", "named", "--json")
    quoted = paxm(tmp_path, "recall", "release branches named", "--json")
    assert words.returncode == quoted.returncode == 0, words.stderr + quoted.stderr
    assert "Release branches are named release/v2" in words.stdout

    def hits(out: str) -> list[object]:
        return [(h["provider"], h["id"], h["text"]) for h in json.loads(out)["hits"]]

    assert hits(words.stdout) == hits(quoted.stdout) == hits(flag.stdout)
    twice = paxm(tmp_path, "recall", "a", "--query", "b")
    assert twice.returncode == 1 and "give the query once" in twice.stderr
    none = paxm(tmp_path, "recall")
    assert none.returncode == 1 and 'paxm recall "QUERY"' in none.stderr


def test_help_command(tmp_path: Path) -> None:
    top = paxm(tmp_path, "help")
    assert top.returncode == 0 and top.stdout == paxm(tmp_path, "--help").stdout
    assert " help " in top.stdout  # listed among the commands
    sub = paxm(tmp_path, "help", "queue", "status")
    assert sub.returncode == 0 and sub.stdout == paxm(tmp_path, "queue", "status", "--help").stdout
    recall = paxm(tmp_path, "help", "recall")
    assert "--all-projects" in recall.stdout and recall.stdout.startswith("Usage: paxm recall")
    unknown = paxm(tmp_path, "help", "recal")
    assert unknown.returncode == 1 and "no such command 'paxm recal'" in unknown.stderr and "recall" in unknown.stderr
