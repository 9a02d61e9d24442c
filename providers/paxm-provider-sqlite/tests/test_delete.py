"""``SQLiteProvider.delete``: the row, its term-index entries and nothing else, in one transaction."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from paxm_core import Deadline, DeadlineExceeded, MemoryItem, MemoryRef, ProviderConfig, ProviderError, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.morphology import canonical


@pytest.fixture
def store(tmp_path: Path) -> SQLiteProvider:
    prov = SQLiteProvider("local", ProviderConfig(path=str(tmp_path / "memory.sqlite")))
    prov.put_batch(
        [
            MemoryItem(text="the staging password rotates every quokka monday", id="secretish"),
            MemoryItem(text="deploys go through the quokka pipeline", id="keep"),
        ],
        Deadline.none(),
    )
    return prov


def _fts_rowids(path: Path, table: str, term: str) -> set[int]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (term,))}


def test_delete_removes_the_row_and_its_index_entries(store: SQLiteProvider) -> None:
    with sqlite3.connect(store.path) as conn:
        rowid, terms = conn.execute("SELECT rowid, terms FROM memories WHERE id = 'secretish'").fetchone()
    term = terms.split()[0]  # an analysed term of this row
    assert rowid in _fts_rowids(store.path, "memory_terms", term)
    assert rowid in _fts_rowids(store.path, "memory_terms", canonical("staging"))

    assert store.delete(MemoryRef("local", "secretish"), Deadline.after(5)) is True

    assert [h.id for h in store.search(SearchQuery("quokka", limit=10), Deadline.none())] == ["keep"]
    assert _fts_rowids(store.path, "memory_terms", canonical("staging")) == set()
    assert rowid not in _fts_rowids(store.path, "memory_terms", term)
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("SELECT id FROM memories").fetchall() == [("keep",)]
        # the external-content index still agrees with the table
        conn.execute("INSERT INTO memory_terms(memory_terms) VALUES ('integrity-check')")


def test_a_missing_id_is_reported_not_raised(store: SQLiteProvider) -> None:
    assert store.delete(MemoryRef("local", "never-stored"), Deadline.none()) is False
    assert store.delete(MemoryRef("local", "secretish"), Deadline.none()) is True
    assert store.delete(MemoryRef("local", "secretish"), Deadline.none()) is False


def test_an_empty_id_is_an_error(store: SQLiteProvider) -> None:
    with pytest.raises(ProviderError, match="needs a memory id"):
        store.delete(MemoryRef("local", " "), Deadline.none())


def test_a_failed_delete_leaves_everything_in_place(store: SQLiteProvider) -> None:
    # another connection holds the write lock: the delete fails (busy) and changes nothing
    blocker = sqlite3.connect(store.path, timeout=0, isolation_level=None)
    blocker.execute("PRAGMA busy_timeout = 0")
    blocker.execute("BEGIN IMMEDIATE")
    try:
        # SQLite's busy wait ends with the call's deadline (the provider is deadline-bound)
        with pytest.raises((ProviderError, DeadlineExceeded)):
            store.delete(MemoryRef("local", "secretish"), Deadline.after(0.2))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert {h.id for h in store.search(SearchQuery("quokka", limit=10), Deadline.none())} == {"secretish", "keep"}


def test_a_deleted_id_can_be_stored_again(store: SQLiteProvider) -> None:
    store.delete(MemoryRef("local", "secretish"), Deadline.none())
    store.put(MemoryItem(text="a new wombat fact", id="secretish"), Deadline.none())
    assert [h.id for h in store.search(SearchQuery("wombat", limit=5), Deadline.none())] == ["secretish"]
    assert store.search(SearchQuery("staging", limit=5), Deadline.none()) == []
