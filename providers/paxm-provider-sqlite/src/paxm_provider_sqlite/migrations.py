"""Schema migrations: named, ordered functions recorded in ``_paxm_migrations``.

The first migration creates upstream paxm's schema verbatim (``IF NOT EXISTS``), so a
database written by upstream opens unchanged and is upgraded in place.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from paxm_core.timefmt import format_time, utcnow
from paxm_provider_sqlite.timestamps import normalize_stamp

__all__ = ["MIGRATIONS", "migrate"]

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


def migrate(conn: sqlite3.Connection) -> None:
    """Apply every migration not yet recorded, each in its own transaction."""
    conn.execute("CREATE TABLE IF NOT EXISTS _paxm_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {str(row[0]) for row in conn.execute("SELECT name FROM _paxm_migrations")}
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have applied it while we waited for the write lock.
            if conn.execute("SELECT 1 FROM _paxm_migrations WHERE name = ?", (fn.__name__,)).fetchone():
                conn.execute("COMMIT")
                continue
            fn(conn)
            conn.execute(
                "INSERT INTO _paxm_migrations(name, applied_at) VALUES (?, ?)", (fn.__name__, format_time(utcnow()))
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
