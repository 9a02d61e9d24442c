"""Rebuild ``benchmarks/sdebench_data/sdebench.json`` from a checkout of sde-bench (MIT).

    uv run python benchmarks/sdebench_vendor.py /path/to/sde-bench [--rev HEAD]

Reads the repository with ``git show`` (a bare clone is enough) and keeps only what
``benchmarks/sdebench.py`` needs: the tasks whose decision lives in a developer conversation
(``source`` ``conversation`` or ``conversation-amended``), with their bug report, chats and the
rule they hinge on, and the decoy conversations.  sde-bench's LICENSE is copied beside the data.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent / "sdebench_data"
TASK_FIELDS = ("task_id", "source", "bug_report", "conversations", "policy", "non_guessable", "function", "module")
SOURCES = ("conversation", "conversation-amended")


def _show(repo: Path, rev: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"{rev}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def build(repo: Path, rev: str) -> dict[str, object]:
    """The vendored document: provenance, the conversation tasks and the decoys."""
    commit = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", rev], check=True, capture_output=True, text=True
    ).stdout.strip()
    names = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", commit], check=True, capture_output=True, text=True
    ).stdout.split()
    tasks = []
    for name in sorted(n for n in names if n.endswith("/tasks/main/task.json")):
        task = json.loads(_show(repo, commit, name))
        if task.get("source") in SOURCES:
            tasks.append({key: task[key] for key in TASK_FIELDS})
    decoys = [
        {"id": d["id"], "topic": d["topic"], "turns": [{"role": t["role"], "text": t["text"]} for t in d["turns"]]}
        for d in json.loads(_show(repo, commit, "gen/decoy_conversations.json"))
    ]
    return {"source": f"https://github.com/vectorize-io/sde-bench@{commit}", "tasks": tasks, "decoys": decoys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--rev", default="HEAD")
    args = parser.parse_args()
    data = build(args.repo, args.rev)
    HERE.mkdir(exist_ok=True)
    (HERE / "sdebench.json").write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
    (HERE / "LICENSE").write_text(_show(args.repo, args.rev, "LICENSE"))
    print(f"{len(data['tasks'])} tasks, {len(data['decoys'])} decoys")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
