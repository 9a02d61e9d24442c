"""Schema migrations: named, ordered functions recorded in ``_paxm_migrations``.

The first migration creates upstream paxm's schema verbatim (``IF NOT EXISTS``), so a
database written by upstream opens unchanged and is upgraded in place.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

from paxm_core.api.timefmt import format_time, utcnow
from paxm_provider_sqlite._db import immediate
from paxm_provider_sqlite.timestamps import normalize_stamp

__all__ = ["MIGRATIONS", "ensure_analyzer", "migrate"]

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}


@migration
def m001_upstream_schema(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE IF NOT EXISTS memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            text TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT '',
            metadata_json TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            tier TEXT NOT NULL DEFAULT 'ltm',
            expires_at TEXT NOT NULL DEFAULT ''
        )"""
    )
    # Databases from early upstream versions predate these columns.
    existing = _columns(conn, "memories")
    if "tier" not in existing:
        conn.execute("ALTER TABLE memories ADD COLUMN tier TEXT NOT NULL DEFAULT 'ltm'")
    if "expires_at" not in existing:
        conn.execute("ALTER TABLE memories ADD COLUMN expires_at TEXT NOT NULL DEFAULT ''")
    conn.execute(
        """CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
            text, source, content='memories', content_rowid='rowid', tokenize='unicode61'
        )"""
    )
    conn.execute(
        """CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memory_fts(rowid, text, source) VALUES (new.rowid, new.text, new.source);
        END"""
    )
    conn.execute(
        """CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memory_fts(memory_fts, rowid, text, source) VALUES ('delete', old.rowid, old.text, old.source);
        END"""
    )
    conn.execute(
        """CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
            INSERT INTO memory_fts(memory_fts, rowid, text, source) VALUES ('delete', old.rowid, old.text, old.source);
            INSERT INTO memory_fts(rowid, text, source) VALUES (new.rowid, new.text, new.source);
        END"""
    )


@migration
def m002_fixed_width_expiry(conn: sqlite3.Connection) -> None:
    """Rewrite ``expires_at`` in fixed-width form so string comparison orders by time.

    Upstream stores Go RFC3339Nano, which trims trailing zeros: ``...:00Z`` sorts after
    ``...:00.5Z`` although it is earlier, so an expiry could be missed by up to a second.
    """
    conn.execute("CREATE INDEX IF NOT EXISTS memories_expires_at ON memories(expires_at) WHERE expires_at != ''")
    rows = conn.execute("SELECT rowid, expires_at FROM memories WHERE expires_at != ''").fetchall()
    for rowid, stamp in rows:
        fixed = normalize_stamp(stamp)
        if fixed != stamp:
            conn.execute("UPDATE memories SET expires_at = ? WHERE rowid = ?", (fixed, rowid))


def _analyse_rows(conn: sqlite3.Connection) -> None:
    from paxm_provider_sqlite.retrieval.analyzer import index_text

    rows = conn.execute("SELECT rowid, text FROM memories").fetchall()

    def analysed() -> Iterator[tuple[str, str, int, int]]:
        for rowid, text in rows:
            indexed = index_text(str(text))
            yield indexed.terms, indexed.extras, indexed.unique, rowid

    conn.executemany("UPDATE memories SET terms = ?, extras = ?, nterms = ? WHERE rowid = ?", analysed())


@migration
def m003_term_index(conn: sqlite3.Connection) -> None:
    """Add the analysed term index that the retrieval pipeline queries.

    ``terms``/``extras`` hold the analyzer's output (see ``retrieval/analyzer.py``) and the
    FTS5 table ``memory_terms`` indexes them, kept in sync by triggers.
    Existing rows are analysed here, once.
    """
    existing = _columns(conn, "memories")
    for column, definition in (
        ("terms", "TEXT NOT NULL DEFAULT ''"),
        ("extras", "TEXT NOT NULL DEFAULT ''"),
        ("nterms", "INTEGER NOT NULL DEFAULT 0"),
    ):
        if column not in existing:
            conn.execute(f"ALTER TABLE memories ADD COLUMN {column} {definition}")
    # m006 drops upstream's raw-text index anyway; dropping it first spares its AFTER UPDATE
    # trigger re-indexing the text of every row analysed below (an upstream file's upgrade).
    _drop_raw_index(conn)
    _analyse_rows(conn)
    conn.execute(
        """CREATE VIRTUAL TABLE IF NOT EXISTS memory_terms USING fts5(
            terms, extras, content='memories', content_rowid='rowid', tokenize="unicode61 tokenchars '_'"
        )"""
    )
    # Index the rows analysed above before the triggers exist: an external-content 'delete'
    # of a row that was never indexed would corrupt the FTS5 index.
    conn.execute("INSERT INTO memory_terms(memory_terms) VALUES ('rebuild')")
    conn.execute(
        """CREATE TRIGGER IF NOT EXISTS memories_terms_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memory_terms(rowid, terms, extras) VALUES (new.rowid, new.terms, new.extras);
        END"""
    )
    conn.execute(
        """CREATE TRIGGER IF NOT EXISTS memories_terms_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memory_terms(memory_terms, rowid, terms, extras)
                VALUES ('delete', old.rowid, old.terms, old.extras);
        END"""
    )
    # Only a change of the analysed columns touches the term index (metadata-only updates
    # such as consolidation counters stay cheap).
    conn.execute(
        """CREATE TRIGGER IF NOT EXISTS memories_terms_au AFTER UPDATE OF terms, extras ON memories BEGIN
            INSERT INTO memory_terms(memory_terms, rowid, terms, extras)
                VALUES ('delete', old.rowid, old.terms, old.extras);
            INSERT INTO memory_terms(rowid, terms, extras) VALUES (new.rowid, new.terms, new.extras);
        END"""
    )


@migration
def m004_created_at_index(conn: sqlite3.Connection) -> None:
    """Let the no-terms recall (newest first) walk an index instead of sorting the table."""
    conn.execute("CREATE INDEX IF NOT EXISTS memories_created_at ON memories(created_at)")


@migration
def m005_meta(conn: sqlite3.Connection) -> None:
    """Key/value facts about the file, starting with the analyzer version its terms come from."""
    from paxm_provider_sqlite.retrieval.analyzer import ANALYZER_VERSION

    conn.execute("CREATE TABLE IF NOT EXISTS _paxm_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT OR REPLACE INTO _paxm_meta(key, value) VALUES ('analyzer_version', ?)", (ANALYZER_VERSION,))


#: Upstream's index over the raw text and the triggers that maintain it (see ``m006``).
_RAW_INDEX = ("memories_ai", "memories_ad", "memories_au", "memory_fts")


def _drop_raw_index(conn: sqlite3.Connection) -> None:
    for trigger in _RAW_INDEX[:3]:
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute("DROP TABLE IF EXISTS memory_fts")


@migration
def m006_drop_raw_text_index(conn: sqlite3.Connection) -> None:
    """Stop maintaining upstream's ``memory_fts``: recall never reads it, and it is derived data
    (``docs/sqlite-provider.md`` shows how to rebuild it for upstream)."""
    _drop_raw_index(conn)


@migration
def m007_cleanup_clock(conn: sqlite3.Connection) -> None:
    """Start expired-memory cleanup's clock readings at the file's creation (or this upgrade).

    Cleanup deletes only up to a reading the clock has kept running forward from
    (``expiry.py``); starting from now means a clock that is already wrong at the first
    cleanup cannot delete what was valid when the file was made.
    """
    from paxm_provider_sqlite.expiry import start_clock

    start_clock(conn, utcnow())


def _ensure_raw_index_gone(conn: sqlite3.Connection) -> None:
    """Drop ``memory_fts`` again if upstream's binary re-created it (empty) after ``m006``: its
    ``'delete'`` of an older, never-indexed row would corrupt it."""
    marks = ", ".join("?" * len(_RAW_INDEX))
    if conn.execute(f"SELECT 1 FROM sqlite_master WHERE name IN ({marks}) LIMIT 1", _RAW_INDEX).fetchone() is None:
        return
    with immediate(conn):
        _drop_raw_index(conn)


def ensure_analyzer(conn: sqlite3.Connection) -> None:
    """Re-analyse every row once when the file was indexed by a different analyzer version.

    The term index is derived data, so a smarter analyzer must not leave old rows invisible
    to the new query forms.  The triggers keep ``memory_terms`` in step with the updates.
    """
    from paxm_provider_sqlite.retrieval.analyzer import ANALYZER_VERSION

    row = conn.execute("SELECT value FROM _paxm_meta WHERE key = 'analyzer_version'").fetchone()
    if row is not None and row[0] == ANALYZER_VERSION:
        return
    with immediate(conn):
        row = conn.execute("SELECT value FROM _paxm_meta WHERE key = 'analyzer_version'").fetchone()
        if row is None or row[0] != ANALYZER_VERSION:
            _analyse_rows(conn)
            conn.execute(
                "INSERT OR REPLACE INTO _paxm_meta(key, value) VALUES ('analyzer_version', ?)", (ANALYZER_VERSION,)
            )


def migrate(conn: sqlite3.Connection) -> None:
    """Apply every migration not yet recorded, each in its own transaction."""
    conn.execute("CREATE TABLE IF NOT EXISTS _paxm_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {str(row[0]) for row in conn.execute("SELECT name FROM _paxm_migrations")}
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        with immediate(conn):
            # Another process may have applied it while we waited for the write lock.
            if not conn.execute("SELECT 1 FROM _paxm_migrations WHERE name = ?", (fn.__name__,)).fetchone():
                fn(conn)
                conn.execute(
                    "INSERT INTO _paxm_migrations(name, applied_at) VALUES (?, ?)",
                    (fn.__name__, format_time(utcnow())),
                )
    _ensure_raw_index_gone(conn)
    ensure_analyzer(conn)
