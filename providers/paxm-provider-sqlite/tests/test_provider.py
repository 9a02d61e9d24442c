"""Behaviour of the SQLite provider against a real database file."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from paxm_core import (
    Deadline,
    DeadlineExceeded,
    MemoryItem,
    MemoryOrigin,
    MemoryScope,
    ProviderConfig,
    ProviderError,
    SearchQuery,
    SupportsCleanupExpired,
    SupportsClose,
    SupportsPutBatch,
    SupportsTurnBoundaries,
    TurnContext,
)
from paxm_core.api.protocols import Provider
from paxm_provider_sqlite.provider import SQLiteProvider

NO_LIMIT = Deadline.none()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "dir" / "memory.sqlite"


@pytest.fixture
def provider(db_path: Path) -> SQLiteProvider:
    prov = SQLiteProvider("local", ProviderConfig(type="sqlite", path=str(db_path)))
    yield prov
    prov.close()


def ids(hits: list) -> list[str]:
    return [h.id for h in hits]


def test_implements_protocols(provider: SQLiteProvider) -> None:
    assert isinstance(provider, Provider)
    for proto in (SupportsPutBatch, SupportsCleanupExpired, SupportsClose, SupportsTurnBoundaries):
        assert isinstance(provider, proto)
    assert provider.preserve_turn_boundaries() is True


def test_open_creates_parent_dir_wal_and_migrations(provider: SQLiteProvider, db_path: Path) -> None:
    provider.health(NO_LIMIT)
    assert db_path.exists()
    raw = sqlite3.connect(db_path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        names = [r[0] for r in raw.execute("SELECT name FROM _paxm_migrations ORDER BY rowid")]
        assert names[0] == "m001_upstream_schema"
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master")}
        assert {"memories", "memory_terms", "memories_terms_ai", "memories_terms_ad", "memories_terms_au"} <= tables
        # upstream's raw-text index is created by m001 and dropped by m006 (recall never reads it)
        assert "m006_drop_raw_text_index" in names
        assert not {"memory_fts", "memories_ai", "memories_ad", "memories_au"} & tables
    finally:
        raw.close()


def test_tilde_path_expanded(tmp_path: Path, isolated_home: Path) -> None:
    prov = SQLiteProvider("s", ProviderConfig(path="~/data/m.sqlite"))
    try:
        prov.health(NO_LIMIT)
        assert (isolated_home / "data" / "m.sqlite").exists()
    finally:
        prov.close()


def test_default_path_under_xdg_data(isolated_home: Path) -> None:
    prov = SQLiteProvider("s", ProviderConfig())
    try:
        prov.health(NO_LIMIT)
        assert prov.path == isolated_home / ".local" / "share" / "paxm" / "memory.sqlite"
        assert prov.path.exists()
    finally:
        prov.close()


def test_connection_is_reused(provider: SQLiteProvider) -> None:
    provider.put(MemoryItem(text="first"), NO_LIMIT)
    conn = provider._db._conn
    provider.search(SearchQuery("first"), NO_LIMIT)
    provider.put(MemoryItem(text="second"), NO_LIMIT)
    assert provider._db._conn is conn


def test_put_and_search_round_trip(provider: SQLiteProvider) -> None:
    created = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    ref = provider.put(
        MemoryItem(
            text="The deploy pipeline uses blue green rollout",
            id="m1",
            source="cli",
            metadata={"k": "v"},
            created_at=created,
        ),
        NO_LIMIT,
    )
    assert (ref.provider, ref.id) == ("local", "m1")
    hits = provider.search(SearchQuery("blue green rollout"), NO_LIMIT)
    assert ids(hits) == ["m1"]
    hit = hits[0]
    assert hit.provider == "local" and hit.source == "cli" and hit.metadata["k"] == "v"
    assert hit.created_at == created and hit.tier == "ltm"
    assert 0.0 < hit.relevance <= 1.0 and hit.score == hit.relevance
    assert hit.raw_score is not None and hit.raw_score > 0 and hit.raw_score_kind == "sqlite_fts_bm25_negated"


def test_generated_id_and_empty_text(provider: SQLiteProvider) -> None:
    ref = provider.put(MemoryItem(text="something"), NO_LIMIT)
    assert len(ref.id) == 32 and int(ref.id, 16) >= 0
    with pytest.raises(ProviderError, match="text is required"):
        provider.put(MemoryItem(text="   "), NO_LIMIT)


def test_batch_is_atomic(provider: SQLiteProvider) -> None:
    with pytest.raises(ProviderError):
        provider.put_batch([MemoryItem(text="kept?", id="a"), MemoryItem(text="", id="b")], NO_LIMIT)
    assert provider.search(SearchQuery("kept"), NO_LIMIT) == []
    refs = provider.put_batch([MemoryItem(text="alpha one", id="a"), MemoryItem(text="alpha two", id="b")], NO_LIMIT)
    assert [r.id for r in refs] == ["a", "b"]


def test_upsert_keeps_created_at_and_updates_index(provider: SQLiteProvider) -> None:
    t0 = datetime(2025, 5, 5, tzinfo=UTC)
    provider.put(MemoryItem(text="original walrus", id="x", created_at=t0), NO_LIMIT)
    provider.put(MemoryItem(text="replacement narwhal", id="x"), NO_LIMIT)
    assert provider.search(SearchQuery("walrus"), NO_LIMIT) == []
    hits = provider.search(SearchQuery("narwhal"), NO_LIMIT)
    assert ids(hits) == ["x"] and hits[0].created_at == t0


def _ltm(fp: str, seen: str, text: str = "Prefers tabs over spaces") -> MemoryItem:
    return MemoryItem(
        text=text,
        id="ltm_" + fp,
        tier="ltm",
        metadata={
            "paxm_fingerprint": fp,
            "paxm_occurrences": "1",
            "paxm_first_seen_at": seen,
            "paxm_last_seen_at": seen,
        },
    )


def test_consolidation_counters(provider: SQLiteProvider) -> None:
    provider.put(_ltm("ab", "2026-01-02T00:00:00Z"), NO_LIMIT)
    provider.put(_ltm("ab", "2026-01-01T00:00:00Z"), NO_LIMIT)
    # duplicates within one batch are consolidated too
    provider.put_batch([_ltm("ab", "2026-01-05T00:00:00Z"), _ltm("ab", "2026-01-03T00:00:00Z")], NO_LIMIT)
    (hit,) = provider.search(SearchQuery("tabs spaces"), NO_LIMIT)
    assert hit.metadata["paxm_occurrences"] == "4"
    assert hit.metadata["paxm_first_seen_at"] == "2026-01-01T00:00:00Z"
    assert hit.metadata["paxm_last_seen_at"] == "2026-01-05T00:00:00Z"


def test_fingerprint_conflict(provider: SQLiteProvider) -> None:
    provider.put(_ltm("ab", "2026-01-02T00:00:00Z"), NO_LIMIT)
    bad = _ltm("ab", "2026-01-02T00:00:00Z").replace(metadata={"paxm_fingerprint": "zz"})
    with pytest.raises(ProviderError, match="fingerprint conflict"):
        provider.put(bad, NO_LIMIT)


def test_turn_context_and_attribution(provider: SQLiteProvider) -> None:
    start = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    provider.put(
        MemoryItem(
            text="turn about kubernetes probes",
            id="t1",
            origin=MemoryOrigin(user_id="u1", agent_id="claude"),
            scope=MemoryScope("personal", "u1"),
            turn=TurnContext(session_id="s9", turn_id="t7", started_at=start, ended_at=start + timedelta(seconds=5)),
        ),
        NO_LIMIT,
    )
    (hit,) = provider.search(SearchQuery("kubernetes probes"), NO_LIMIT)
    meta = hit.metadata
    assert meta["session_id"] == "s9" and meta["turn_id"] == "t7"
    assert meta["started_at"].startswith("2026-03-01T10:00:00") and meta["ended_at"].startswith("2026-03-01T10:00:05")
    assert meta["paxm_user_id"] == "u1" and meta["paxm_session_id"] == "s9" and meta["paxm_scope_id"] == "u1"
    assert hit.origin == MemoryOrigin(user_id="u1", agent_id="claude", session_id="s9", turn_id="t7")
    assert hit.scope == MemoryScope("personal", "u1")
    assert hit.provenance.scope_type == "personal"


def test_hit_without_scope_is_unknown(provider: SQLiteProvider) -> None:
    provider.put(MemoryItem(text="scopeless giraffe"), NO_LIMIT)
    (hit,) = provider.search(SearchQuery("giraffe"), NO_LIMIT)
    assert hit.scope == MemoryScope(type="unknown")


def test_expired_never_returned_and_cleanup(provider: SQLiteProvider, db_path: Path) -> None:
    now = datetime.now(UTC)
    provider.put(MemoryItem(text="stale lemur", id="old", tier="stm", expires_at=now - timedelta(hours=1)), NO_LIMIT)
    provider.put(MemoryItem(text="fresh lemur", id="new", tier="stm", expires_at=now + timedelta(hours=1)), NO_LIMIT)
    provider.put(MemoryItem(text="forever lemur", id="ltm"), NO_LIMIT)
    assert sorted(ids(provider.search(SearchQuery("lemur"), NO_LIMIT))) == ["ltm", "new"]
    assert "old" not in ids(provider.search(SearchQuery("..."), NO_LIMIT))  # recent-rows path too
    assert provider.cleanup_expired(0, NO_LIMIT) == 1
    assert provider.cleanup_expired(10, NO_LIMIT) == 0
    raw = sqlite3.connect(db_path)
    try:
        assert sorted(r[0] for r in raw.execute("SELECT id FROM memories")) == ["ltm", "new"]
        # the term index followed the delete (external content kept in sync by triggers)
        assert raw.execute("SELECT count(*) FROM memory_terms WHERE memory_terms MATCH 'stale'").fetchone()[0] == 0
        raw.execute("INSERT INTO memory_terms(memory_terms) VALUES ('integrity-check')")
    finally:
        raw.close()


def test_cleanup_limit_clamped(provider: SQLiteProvider) -> None:
    past = datetime.now(UTC) - timedelta(minutes=5)
    provider.put_batch(
        [MemoryItem(text=f"gone {i}", tier="stm", expires_at=past + timedelta(seconds=i)) for i in range(7)],
        NO_LIMIT,
    )
    assert provider.cleanup_expired(3, NO_LIMIT) == 3
    assert provider.cleanup_expired(-1, NO_LIMIT) == 4


def test_tier_filter(provider: SQLiteProvider) -> None:
    provider.put(MemoryItem(text="tiered otter", id="s", tier="STM"), NO_LIMIT)
    provider.put(MemoryItem(text="tiered otter", id="l", tier="weird"), NO_LIMIT)
    assert ids(provider.search(SearchQuery("otter", tiers=("stm",)), NO_LIMIT)) == ["s"]
    assert ids(provider.search(SearchQuery("otter", tiers=("ltm",)), NO_LIMIT)) == ["l"]


def test_workspace_isolation(provider: SQLiteProvider) -> None:
    provider.put(MemoryItem(text="build uses pnpm", id="a", metadata={"workspace": "/w/a"}), NO_LIMIT)
    provider.put(MemoryItem(text="build uses cargo", id="b", metadata={"workspace": "/w/b"}), NO_LIMIT)
    provider.put(MemoryItem(text="build uses make", id="u"), NO_LIMIT)
    got = ids(provider.search(SearchQuery("build", metadata={"workspace": "/w/a"}), NO_LIMIT))
    assert sorted(got) == ["a", "u"]
    assert sorted(ids(provider.search(SearchQuery("build"), NO_LIMIT))) == ["a", "b", "u"]


def test_explicit_filters(provider: SQLiteProvider) -> None:
    provider.put(MemoryItem(text="filter pelican", id="a", metadata={"team": "x"}), NO_LIMIT)
    provider.put(MemoryItem(text="filter pelican", id="b", metadata={"team": "y"}), NO_LIMIT)
    assert ids(provider.search(SearchQuery("pelican", filters={"team": "y"}), NO_LIMIT)) == ["b"]
    assert provider.search(SearchQuery("pelican", filters={'we"ird': "y"}), NO_LIMIT) == []


@pytest.mark.parametrize(
    "query",
    ['"', '"unbalanced', "*", "a*", "col:value", "NEAR(a b)", "x AND y", "AND", "OR", "NOT", "-x", "^y", "(", ")"],
)
def test_fts_syntax_is_searched_as_text(provider: SQLiteProvider, query: str) -> None:
    provider.put(MemoryItem(text=f"literal {query} marker zebra", id="m"), NO_LIMIT)
    hits = provider.search(SearchQuery(query + " zebra"), NO_LIMIT)
    assert ids(hits) == ["m"]


def test_punctuation_only_query_returns_recent_low_scores(provider: SQLiteProvider) -> None:
    provider.put(MemoryItem(text="one", id="a", created_at=datetime(2026, 1, 1, tzinfo=UTC)), NO_LIMIT)
    provider.put(MemoryItem(text="two", id="b", created_at=datetime(2026, 1, 2, tzinfo=UTC)), NO_LIMIT)
    hits = provider.search(SearchQuery("?!", limit=5), NO_LIMIT)
    assert ids(hits) == ["b", "a"] and all(h.relevance == pytest.approx(0.1) for h in hits)


def test_limit_respected(provider: SQLiteProvider) -> None:
    provider.put_batch([MemoryItem(text=f"limit heron {i}") for i in range(20)], NO_LIMIT)
    assert len(provider.search(SearchQuery("heron", limit=3), NO_LIMIT)) == 3


def test_expired_deadline_fails_before_work(provider: SQLiteProvider) -> None:
    with pytest.raises(DeadlineExceeded):
        provider.put(MemoryItem(text="never stored", id="n"), Deadline.cancelled_now())
    with pytest.raises(DeadlineExceeded):
        provider.search(SearchQuery("x"), Deadline.after(0))
    assert provider.search(SearchQuery("stored"), NO_LIMIT) == []


def test_deadline_interrupts_running_query(provider: SQLiteProvider) -> None:
    provider.put(MemoryItem(text="x"), NO_LIMIT)
    conn_deadline = Deadline.after(0.05)
    with pytest.raises(DeadlineExceeded):
        with provider._db.session("search", conn_deadline) as conn:
            # A deliberately endless query: only the progress handler can stop it.
            conn.execute(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
            ).fetchone()
    # the connection stays usable afterwards
    assert len(provider.search(SearchQuery("..."), NO_LIMIT)) == 1


def test_closed_provider_errors(provider: SQLiteProvider) -> None:
    provider.health(NO_LIMIT)
    provider.close()
    with pytest.raises(ProviderError, match="closed"):
        provider.search(SearchQuery("x"), NO_LIMIT)
    provider.close()  # idempotent


def test_unwritable_location_is_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    prov = SQLiteProvider("s", ProviderConfig(path=str(blocker / "m.sqlite")))
    with pytest.raises(ProviderError, match="cannot open"):
        prov.health(NO_LIMIT)


def test_thread_safety(provider: SQLiteProvider) -> None:
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(25):
                provider.put(MemoryItem(text=f"concurrent kiwi {n} {i}", id=f"{n}-{i}"), NO_LIMIT)
                provider.search(SearchQuery(f"kiwi {n}"), NO_LIMIT)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(provider.search(SearchQuery("kiwi", limit=500), NO_LIMIT)) == 150


def test_two_providers_same_file(db_path: Path) -> None:
    a = SQLiteProvider("a", ProviderConfig(path=str(db_path)))
    b = SQLiteProvider("b", ProviderConfig(path=str(db_path)))
    try:
        a.put(MemoryItem(text="shared quokka", id="q"), NO_LIMIT)
        assert ids(b.search(SearchQuery("quokka"), NO_LIMIT)) == ["q"]
    finally:
        a.close()
        b.close()


def test_opens_upstream_database(tmp_path: Path) -> None:
    path = tmp_path / "up.sqlite"
    raw = sqlite3.connect(path)
    raw.executescript(
        """
        CREATE TABLE memories (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL,
          source TEXT NOT NULL DEFAULT '', metadata_json TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL,
          updated_at TEXT NOT NULL);
        CREATE VIRTUAL TABLE memory_fts USING fts5(text, source, content='memories', content_rowid='rowid',
          tokenize='unicode61');
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
          INSERT INTO memory_fts(rowid, text, source) VALUES (new.rowid, new.text, new.source); END;
        INSERT INTO memories(id, text, created_at, updated_at)
          VALUES ('up1', 'legacy memory about gradle', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z');
        """
    )
    raw.close()
    prov = SQLiteProvider("s", ProviderConfig(path=str(path)))
    try:
        hits = prov.search(SearchQuery("gradle"), NO_LIMIT)
        assert ids(hits) == ["up1"] and hits[0].tier == "ltm"
    finally:
        prov.close()


def test_reanalyses_rows_from_another_analyzer_version(db_path: Path) -> None:
    prov = SQLiteProvider("s", ProviderConfig(path=str(db_path)))
    prov.put(MemoryItem(text="deploymentPipeline owner is ops", id="d"), NO_LIMIT)
    prov.close()
    raw = sqlite3.connect(db_path)
    # Simulate rows indexed by an older analyzer: empty term columns, stale version.
    raw.execute("UPDATE memories SET terms = '', extras = '', nterms = 0")
    raw.execute("UPDATE _paxm_meta SET value = 'old' WHERE key = 'analyzer_version'")
    raw.commit()
    raw.close()
    prov = SQLiteProvider("s", ProviderConfig(path=str(db_path)))
    try:
        assert [h.id for h in prov.search(SearchQuery("deploy pipeline"), NO_LIMIT)] == ["d"]
    finally:
        prov.close()


_WRITER = """
import sys
from paxm_core import Deadline, MemoryItem, ProviderConfig
from paxm_provider_sqlite.provider import SQLiteProvider
prov = SQLiteProvider("p", ProviderConfig(path=sys.argv[1]))
for i in range(150):
    prov.put(MemoryItem(text=f"process {sys.argv[2]} wrote walrus {i}", id=f"{sys.argv[2]}-{i}"), Deadline.after(30))
prov.close()
"""


def test_two_processes_write_one_file(db_path: Path) -> None:
    import subprocess
    import sys

    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(db_path), name], stderr=subprocess.PIPE, text=True)
        for name in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    prov = SQLiteProvider("s", ProviderConfig(path=str(db_path)))
    try:
        hits = prov.search(SearchQuery("walrus", limit=1000), NO_LIMIT)
        assert len(hits) == 300
        raw = sqlite3.connect(db_path)
        try:
            names = [r[0] for r in raw.execute("SELECT name FROM _paxm_migrations")]
            assert len(names) == len(set(names))  # each migration applied exactly once
        finally:
            raw.close()
    finally:
        prov.close()
