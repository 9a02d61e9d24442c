"""Recall@10 on long multi-session developer chats nobody on the project wrote: never below lexical.

The chats are sde-bench's (MIT, ``vectorize-io/sde-bench``), vendored in the repository
(``benchmarks/sdebench_data``, with its licence).  Every message of the 140 decoy chats and of
the conversation tasks' chats is one memory.  A decoy chat's topic line asks for that chat's
messages; a task's bug report asks for the messages of the chats that decided its rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider

#: sde-bench's tasks and decoy chats as the repository vendors them (benchmarks/sdebench_vendor.py)
DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "sdebench_data" / "sdebench.json"

Query = tuple[str, str, frozenset[str]]


def _corpus() -> tuple[list[tuple[str, str]], list[Query]]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    memories: list[tuple[str, str]] = []
    queries: list[Query] = []
    for chat in data["decoys"]:
        ids = [f"{chat['id']}:{i}" for i in range(len(chat["turns"]))]
        memories += [(i, turn["text"]) for i, turn in zip(ids, chat["turns"], strict=True)]
        queries.append(("topic", chat["topic"], frozenset(ids)))
    for task in data["tasks"]:
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
