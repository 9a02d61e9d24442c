"""Recall@10 on long multi-session developer chats nobody on the project wrote: never below lexical.

The chats are sde-bench's (MIT, ``vectorize-io/sde-bench``), read from a local mirror of the
repository (``$PAXM_SDEBENCH_MIRROR``, a bare git repository; default the helper mirror path);
the test skips with a reason when it is absent.  Every message of the 140 decoy chats and of
the conversation tasks' chats is one memory.  A decoy chat's topic line asks for that chat's
messages; a task's bug report asks for the messages of the chats that decided its rule.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider

MIRROR = Path(os.environ.get("PAXM_SDEBENCH_MIRROR", "/work/.mirror/vectorize-io+sde-bench/repo"))

Query = tuple[str, str, frozenset[str]]


def _show(path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
    ).stdout


def _corpus() -> tuple[list[tuple[str, str]], list[Query]]:
    memories: list[tuple[str, str]] = []
    queries: list[Query] = []
    for chat in json.loads(_show("gen/decoy_conversations.json")):
        ids = [f"{chat['id']}:{i}" for i in range(len(chat["turns"]))]
        memories += [(i, turn["text"]) for i, turn in zip(ids, chat["turns"], strict=True)]
        queries.append(("topic", chat["topic"], frozenset(ids)))
    names = subprocess.run(
        ["git", "-C", str(MIRROR), "ls-tree", "--name-only", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.split()
    for name in names:
        if not name.startswith("boltons"):
            continue
        task = json.loads(_show(f"{name}/tasks/main/task.json"))
        if not str(task.get("source", "")).startswith("conversation"):
            continue
        chats = task["conversations"]
        chats = [chats] if chats and isinstance(chats[0], dict) else chats
        evidence: set[str] = set()
        for k, chat in enumerate(chats):
            ids = [f"{task['task_id']}:{k}:{i}" for i in range(len(chat))]
            memories += [(i, turn["text"]) for i, turn in zip(ids, chat, strict=True)]
            evidence.update(ids)
        queries.append(("bug report", task["bug_report"], frozenset(evidence)))
    return memories, queries


def _recall_at_10(provider: SQLiteProvider, queries: list[Query]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for kind, text, evidence in queries:
        got = {hit.id for hit in provider.search(SearchQuery(text, limit=10), Deadline.after(60))[:10]}
        sums.setdefault(kind, []).append(len(got & evidence) / len(evidence))
    return {kind: sum(values) / len(values) for kind, values in sums.items()}


@pytest.mark.slow
def test_hybrid_recall_at_10_is_at_least_lexical_on_long_conversations(tmp_path: Path) -> None:
    if not (MIRROR / "HEAD").is_file():
        pytest.skip(
            f"sde-bench mirror not found at {MIRROR} (set PAXM_SDEBENCH_MIRROR to a clone of vectorize-io/sde-bench)"
        )
    memories, queries = _corpus()
    hybrid = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(tmp_path / "m.sqlite")), warm=False)
    plain = SQLiteProvider("plain", ProviderConfig(path=str(hybrid.path)))
    try:
        for start in range(0, len(memories), 256):
            batch = memories[start : start + 256]
            hybrid.put_batch([MemoryItem(text=t, id=i, tier="ltm") for i, t in batch], Deadline.none())
        lexical, fused = _recall_at_10(plain, queries), _recall_at_10(hybrid, queries)
    finally:
        plain.close()
        hybrid.close()
    for kind in lexical:
        assert fused[kind] >= lexical[kind], (kind, fused, lexical)
    assert fused["topic"] >= lexical["topic"] + 0.05, (fused, lexical)  # measured 0.426 vs 0.314
