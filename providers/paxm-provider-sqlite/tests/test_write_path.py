"""The batched write path and the schema upgrade that dropped upstream's ``memory_fts``.

A batch is written with one lookup and one ``executemany``; these tests pin that it behaves
exactly like the same items written one ``put`` at a time, that it stays all-or-nothing, and
that files from before the change (paxm's own, and upstream's) upgrade in place with every
memory still recallable.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from paxm_core import Deadline, DeadlineExceeded, MemoryItem, ProviderConfig, ProviderError, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider

NO_LIMIT = Deadline.none()
RAW_INDEX = {"memory_fts", "memories_ai", "memories_ad", "memories_au"}


def _open(path: Path) -> SQLiteProvider:
    return SQLiteProvider("s", ProviderConfig(path=str(path)))


def _ltm(fp: str, seen: str, item_id: str = "", text: str = "Prefers tabs over spaces") -> MemoryItem:
    return MemoryItem(
        text=text,
        id=item_id or "ltm_" + fp,
        tier="ltm",
        metadata={
            "paxm_fingerprint": fp,
            "paxm_occurrences": "1",
            "paxm_first_seen_at": seen,
            "paxm_last_seen_at": seen,
        },
        created_at=datetime.fromisoformat(seen.replace("Z", "+00:00")),
    )


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT id, text, source, metadata_json, created_at, tier, expires_at, terms, extras, nterms"
            " FROM memories ORDER BY id"
        ).fetchall()


def _names(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}


def test_a_batch_stores_what_one_put_at_a_time_stores(tmp_path: Path) -> None:
    at = datetime(2026, 2, 1, tzinfo=UTC)
    items_ok = [
        _ltm("ab", "2026-01-02T00:00:00Z"),
        MemoryItem(text="plain note about gradle caches", id="n1", source="cli", created_at=at),
        _ltm("ab", "2026-01-01T00:00:00Z"),  # same id: consolidates into the row just written
        MemoryItem(text="an overwrite of a plain note", id="n1", created_at=at + timedelta(seconds=1)),
        _ltm("cd", "2026-01-04T00:00:00Z"),
        _ltm("ab", "2026-01-05T00:00:00Z"),
        _ltm("cd", "2026-01-03T00:00:00Z"),
        MemoryItem(
            text="short-lived", id="stm1", tier="stm", expires_at=datetime(2030, 1, 1, tzinfo=UTC), created_at=at
        ),
    ]
    one, batch = tmp_path / "one.sqlite", tmp_path / "batch.sqlite"
    a, b = _open(one), _open(batch)
    try:
        for item in items_ok:
            a.put(item, NO_LIMIT)
        b.put_batch(items_ok, NO_LIMIT)
    finally:
        a.close()
        b.close()
    assert _rows(one) == _rows(batch)
    meta = {str(r[0]): str(r[3]) for r in _rows(batch)}["ltm_ab"]
    assert '"paxm_occurrences":"3"' in str(meta)
    assert '"paxm_first_seen_at":"2026-01-01T00:00:00Z"' in str(meta)
    assert '"paxm_last_seen_at":"2026-01-05T00:00:00Z"' in str(meta)


def test_a_conflict_anywhere_in_a_batch_writes_nothing(tmp_path: Path) -> None:
    prov = _open(tmp_path / "m.sqlite")
    try:
        prov.put(_ltm("ab", "2026-01-02T00:00:00Z"), NO_LIMIT)
        before = _rows(prov.path)
        batch = [MemoryItem(text=f"fresh walrus {i}", id=f"w{i}") for i in range(300)]
        batch.append(_ltm("zz", "2026-01-03T00:00:00Z", item_id="ltm_ab"))
        with pytest.raises(ProviderError, match="fingerprint conflict"):
            prov.put_batch(batch, NO_LIMIT)
        assert _rows(prov.path) == before
        assert prov.search(SearchQuery("walrus"), NO_LIMIT) == []
        # an id repeated in the batch conflicts with what the batch itself wrote first
        with pytest.raises(ProviderError, match="fingerprint conflict"):
            prov.put_batch([_ltm("x1", "2026-01-01T00:00:00Z"), _ltm("x2", "2026-01-01T00:00:00Z", "ltm_x1")], NO_LIMIT)
        assert _rows(prov.path) == before
    finally:
        prov.close()


def test_a_batch_over_the_lookup_chunk_consolidates_every_item(tmp_path: Path) -> None:
    prov = _open(tmp_path / "m.sqlite")
    try:
        items = [_ltm(f"f{i}", "2026-01-02T00:00:00Z", text=f"habit number {i}") for i in range(1200)]
        prov.put_batch(items, NO_LIMIT)
        prov.put_batch([_ltm(f"f{i}", "2026-01-01T00:00:00Z", text=f"habit number {i}") for i in range(1200)], NO_LIMIT)
        with sqlite3.connect(prov.path) as conn:
            counts = {
                r[0] for r in conn.execute("SELECT json_extract(metadata_json, '$.paxm_occurrences') FROM memories")
            }
        assert counts == {"2"}
    finally:
        prov.close()


def test_an_expired_deadline_interrupts_a_large_batch_and_writes_nothing(tmp_path: Path) -> None:
    prov = _open(tmp_path / "m.sqlite")
    try:
        prov.health(NO_LIMIT)
        items = [MemoryItem(text=f"bulk capybara {i} " + "lorem ipsum " * 40, id=f"c{i}") for i in range(3000)]
        deadline = Deadline.after(0.02)
        with pytest.raises(DeadlineExceeded):
            prov.put_batch(items, deadline)
        assert _rows(prov.path) == []
        prov.put(MemoryItem(text="after the interruption", id="ok"), NO_LIMIT)
        assert [h.id for h in prov.search(SearchQuery("interruption"), NO_LIMIT)] == ["ok"]
    finally:
        prov.close()


_PRE_M006 = """
CREATE TABLE _paxm_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
"""
_RAW_INDEX_SQL = """
CREATE VIRTUAL TABLE memory_fts USING fts5(text, source, content='memories', content_rowid='rowid',
  tokenize='unicode61');
INSERT INTO memory_fts(memory_fts) VALUES ('rebuild');
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memory_fts(rowid, text, source) VALUES (new.rowid, new.text, new.source); END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
  INSERT INTO memory_fts(memory_fts, rowid, text, source)
            VALUES ('delete', old.rowid, old.text, old.source); END;
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
  INSERT INTO memory_fts(memory_fts, rowid, text, source)
            VALUES ('delete', old.rowid, old.text, old.source);
  INSERT INTO memory_fts(rowid, text, source) VALUES (new.rowid, new.text, new.source); END;
"""


def _pre_m006_file(path: Path, count: int) -> None:
    """A file as paxm wrote it before m006: every migration up to m005, memory_fts maintained."""
    from paxm_provider_sqlite import migrations

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    kept = migrations.MIGRATIONS[:5]
    assert [fn.__name__ for fn in kept][-1] == "m005_meta"
    conn.executescript(_PRE_M006)
    for fn in kept:
        conn.execute("BEGIN")
        fn(conn)
        conn.execute("INSERT INTO _paxm_migrations VALUES (?, '2026-01-01T00:00:00Z')", (fn.__name__,))
        conn.execute("COMMIT")
    from paxm_provider_sqlite.retrieval.analyzer import index_text

    conn.execute("BEGIN")
    for i in range(count):
        text = f"old fact {i} about the marmot{i:05d} deployment"
        idx = index_text(text)
        conn.execute(
            "INSERT INTO memories(id, text, created_at, updated_at, terms, extras, nterms)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                f"o{i}",
                text,
                "2026-01-01T00:00:00.000000Z",
                "2026-01-01T00:00:00.000000Z",
                idx.terms,
                idx.extras,
                idx.unique,
            ),
        )
    conn.execute("COMMIT")
    # today's m003 drops upstream's index early (m006 would anyway): put it back as it was
    conn.executescript(_RAW_INDEX_SQL)
    assert conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'marmot00000'").fetchone()[0] == 1
    conn.close()


def test_a_file_with_memory_fts_upgrades_in_place_and_stays_recallable(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _pre_m006_file(path, 400)
    assert RAW_INDEX <= _names(path)
    prov = _open(path)
    try:
        for i in (0, 7, 399):
            assert [h.id for h in prov.search(SearchQuery(f"marmot{i:05d}"), NO_LIMIT)] == [f"o{i}"]
        assert len(prov.search(SearchQuery("marmot deploying", limit=500), NO_LIMIT)) == 400
        # writes, updates and deletes keep working without the dropped triggers
        prov.put(MemoryItem(text="replacement text about a badger", id="o7"), NO_LIMIT)
        assert [h.id for h in prov.search(SearchQuery("badger"), NO_LIMIT)] == ["o7"]
        assert prov.search(SearchQuery("marmot00007"), NO_LIMIT) == []
    finally:
        prov.close()
    assert not RAW_INDEX & _names(path)
    with sqlite3.connect(path) as conn:
        applied = {r[0] for r in conn.execute("SELECT name FROM _paxm_migrations")}
        assert "m006_drop_raw_text_index" in applied
        conn.execute("INSERT INTO memory_terms(memory_terms) VALUES ('integrity-check')")


def test_an_upstream_file_upgrades_and_every_memory_is_recallable(tmp_path: Path) -> None:
    path = tmp_path / "up.sqlite"
    raw = sqlite3.connect(path)
    raw.executescript(
        """
        CREATE TABLE memories (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL,
          source TEXT NOT NULL DEFAULT '', metadata_json TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL,
          updated_at TEXT NOT NULL, tier TEXT NOT NULL DEFAULT 'ltm', expires_at TEXT NOT NULL DEFAULT '');
        """
        + _RAW_INDEX_SQL
    )
    future = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    raw.executemany(
        "INSERT INTO memories(id, text, created_at, updated_at, tier, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                f"u{i}",
                f"upstream memory {i} on HTTPServer quokka{i:04d}",
                "2025-01-01T00:00:00Z",
                "2025-01-01T00:00:00Z",
                "stm" if i % 2 else "ltm",
                future if i % 2 else "",
            )
            for i in range(300)
        ],
    )
    raw.commit()
    raw.close()
    prov = _open(path)
    try:
        for i in (0, 1, 299):
            hits = prov.search(SearchQuery(f"quokka{i:04d}", tiers=("stm", "ltm")), NO_LIMIT)
            assert [h.id for h in hits] == [f"u{i}"]
        # identifier splitting works on upgraded rows (they were analysed by the migration)
        assert len(prov.search(SearchQuery("http server", limit=500, tiers=("stm", "ltm")), NO_LIMIT)) == 300
    finally:
        prov.close()
    assert not RAW_INDEX & _names(path)


def test_memory_fts_recreated_by_upstream_is_dropped_on_the_next_open(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    prov = _open(path)
    prov.put(MemoryItem(text="written by paxm about otters", id="p1"), NO_LIMIT)
    prov.close()
    # upstream's binary opens the file: it creates its index and triggers again, empty
    with sqlite3.connect(path) as raw:
        raw.executescript(
            """
            CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(text, source, content='memories',
              content_rowid='rowid', tokenize='unicode61');
            CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
              INSERT INTO memory_fts(rowid, text, source) VALUES (new.rowid, new.text, new.source); END;
            CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
              INSERT INTO memory_fts(memory_fts, rowid, text, source)
            VALUES ('delete', old.rowid, old.text, old.source);
              INSERT INTO memory_fts(rowid, text, source) VALUES (new.rowid, new.text, new.source); END;
            """
        )
        raw.execute(
            "INSERT INTO memories(id, text, created_at, updated_at) VALUES ('g1', 'written by upstream about otters',"
            " '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')"
        )
    prov = _open(path)
    try:
        # the upstream-written row has empty terms until re-analysed; paxm's own row is found
        assert "p1" in [h.id for h in prov.search(SearchQuery("otters"), NO_LIMIT)]
        # updating the paxm row (never in upstream's fresh index) must not corrupt anything
        prov.put(MemoryItem(text="rewritten otters fact", id="p1"), NO_LIMIT)
    finally:
        prov.close()
    assert not RAW_INDEX & _names(path)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO memory_terms(memory_terms) VALUES ('integrity-check')")


def test_new_files_use_8k_pages_and_existing_files_keep_theirs(tmp_path: Path) -> None:
    fresh = _open(tmp_path / "new.sqlite")
    fresh.health(NO_LIMIT)
    fresh.close()
    old_path = tmp_path / "old.sqlite"
    _pre_m006_file(old_path, 3)
    old = _open(old_path)
    old.health(NO_LIMIT)
    old.close()
    with sqlite3.connect(tmp_path / "new.sqlite") as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 8192
    with sqlite3.connect(old_path) as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
