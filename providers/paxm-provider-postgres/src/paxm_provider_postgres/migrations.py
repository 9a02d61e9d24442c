"""Versioned schema migrations, serialised across machines by an advisory lock; an up-to-date
server is never written to (a read-only replica opens for recall).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from paxm_core import Deadline

if TYPE_CHECKING:
    import psycopg

__all__ = ["LATEST", "MIGRATIONS", "migrate"]

#: version -> statements; ``{s}`` is the quoted schema.  Never edit a released version: add one.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        """CREATE TABLE IF NOT EXISTS {s}.paxm_memories (
            id text PRIMARY KEY,
            -- Insertion order, the tie-break SQLite's rowid gives (kept on upsert).
            seq bigint GENERATED ALWAYS AS IDENTITY,
            text text NOT NULL,
            source text NOT NULL DEFAULT '',
            metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,
            scope text NOT NULL,
            writer text NOT NULL DEFAULT '',
            tier text NOT NULL DEFAULT 'ltm',
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            expires_at timestamptz,
            fingerprint text NOT NULL DEFAULT '',
            occurrences integer NOT NULL DEFAULT 1,
            first_seen_at timestamptz,
            last_seen_at timestamptz,
            terms text NOT NULL DEFAULT '',
            extras text NOT NULL DEFAULT '',
            nterms integer NOT NULL DEFAULT 0,
            tsv tsvector NOT NULL DEFAULT ''::tsvector
        )""",
        # Full-text: the analysed terms (the SQLite provider's analyzer) with positions.  No
        # pending list (fastupdate off): every recall probes this index several times, and a
        # full pending list costs each probe a linear scan of up to 4 MB of recent entries.
        """CREATE INDEX IF NOT EXISTS paxm_memories_tsv ON {s}.paxm_memories USING gin (tsv)
            WITH (fastupdate = off)""",
        # Verbatim substrings the analyzer does not index (hashes, base64, very long tokens).
        # Rarely queried and costly to update, so it keeps a (small) pending list.
        """CREATE INDEX IF NOT EXISTS paxm_memories_text_trgm ON {s}.paxm_memories USING gin (text gin_trgm_ops)
            WITH (fastupdate = on, gin_pending_list_limit = 512)""",
        # The no-terms recall (newest first within the visible scopes).
        """CREATE INDEX IF NOT EXISTS paxm_memories_scope_created
            ON {s}.paxm_memories (scope, created_at DESC, seq DESC)""",
        "CREATE INDEX IF NOT EXISTS paxm_memories_created ON {s}.paxm_memories (created_at DESC, seq DESC)",
        """CREATE INDEX IF NOT EXISTS paxm_memories_expires ON {s}.paxm_memories (expires_at)
            WHERE expires_at IS NOT NULL""",
        "CREATE INDEX IF NOT EXISTS paxm_memories_eval ON {s}.paxm_memories (id) WHERE id LIKE 'paxm-eval-%'",
        """CREATE TABLE IF NOT EXISTS {s}.paxm_meta (key text PRIMARY KEY, value text NOT NULL)""",
    ),
}
LATEST = max(MIGRATIONS)


def _ident(schema: str) -> str:
    return '"' + schema.replace('"', '""') + '"'


def _applied(conn: psycopg.Connection[Any], schema: str) -> set[int]:
    exists = conn.execute("SELECT to_regclass(%s)", (f"{_ident(schema)}.paxm_migrations",)).fetchone()
    if exists is None or exists[0] is None:
        return set()
    rows = conn.execute(f"SELECT version FROM {_ident(schema)}.paxm_migrations").fetchall()
    return {int(r[0]) for r in rows}


def migrate(conn: psycopg.Connection[Any], schema: str, deadline: Deadline) -> bool:
    """Bring ``schema`` up to :data:`LATEST` on an autocommit connection; return whether the server is read-only."""
    row = conn.execute("SELECT current_setting('transaction_read_only') = 'on' OR pg_is_in_recovery()").fetchone()
    read_only = bool(row and row[0])
    if _applied(conn, schema) >= set(MIGRATIONS):
        return read_only
    if read_only:
        from psycopg import errors

        raise errors.ReadOnlySqlTransaction("cannot create paxm's tables on a read-only server")
    s = _ident(schema)
    left = deadline.timeout(60.0) or 60.0
    with conn.transaction():
        conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(left * 1000)}ms",))
        # One applier per database at a time, on every machine sharing the server (database-wide
        # rather than per schema: CREATE EXTENSION is per database and races between schemas).
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('paxm-migrate', 7291))")
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
        conn.execute(
            f"""CREATE TABLE IF NOT EXISTS {s}.paxm_migrations (
                version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = _applied(conn, schema)
        for version in sorted(MIGRATIONS):
            if version in done:
                continue
            for statement in MIGRATIONS[version]:
                conn.execute(statement.format(s=s))
            conn.execute(f"INSERT INTO {s}.paxm_migrations(version) VALUES (%s)", (version,))
    return read_only
