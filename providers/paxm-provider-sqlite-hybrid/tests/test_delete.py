"""Deleting from ``sqlite-hybrid`` drops the memory's vector too (table and in-process cache)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from paxm_core import Deadline, MemoryItem, MemoryRef, ProviderConfig, SearchQuery
from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider

PARAPHRASE = "in which zone are dates persisted?"


def test_delete_removes_the_vector_and_semantic_recall(tmp_path: Path) -> None:
    prov = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(tmp_path / "memory.sqlite")))
    try:
        prov.put_batch(
            [
                MemoryItem(text="All timestamps are stored in UTC and converted only in the UI.", id="tz"),
                MemoryItem(text="Personal note: the sourdough starter needs feeding twice a day.", id="cook"),
            ],
            Deadline.none(),
        )
        assert [h.id for h in prov.search(SearchQuery(PARAPHRASE, limit=3), Deadline.after(10))] == ["tz"]
        assert prov.delete(MemoryRef("hybrid", "tz"), Deadline.after(10)) is True
        assert prov.search(SearchQuery(PARAPHRASE, limit=3), Deadline.after(10)) == []
        with sqlite3.connect(prov.path) as conn:
            assert conn.execute("SELECT count(*) FROM hybrid_vectors").fetchone() == (1,)
        assert prov.vector_status(Deadline.none()) == (1, 1)
        # a new memory that may reuse the freed rowid never inherits the forgotten vector
        prov.put(MemoryItem(text="Bread flour is kept in the blue jar.", id="flour"), Deadline.none())
        assert "flour" not in [h.id for h in prov.search(SearchQuery(PARAPHRASE, limit=3), Deadline.after(10))]
        assert prov.delete(MemoryRef("hybrid", "tz"), Deadline.none()) is False
    finally:
        prov.close()
