"""Document frequencies of query groups: bounded counts from the term index, cached per connection.

The plan (``search.py``) needs, per query group, how many memories contain it, but only up to
``DF_CAP``: beyond the cap a group is simply "common".  Each count is an FTS5 lookup bounded by
``LIMIT DF_CAP``, and all of a query's uncached groups are counted in one statement (one round
trip instead of one per group: a 300-word prompt probes 64 groups).

Counts are cached while the database content cannot have changed: the cache is keyed on the
connection object, its ``total_changes`` (every row this connection inserted, updated or deleted,
triggers included) and ``PRAGMA data_version`` (bumped when another connection commits).  Any
write, committed or rolled back, therefore empties the cache; nothing is cached inside an open
transaction, whose writes a rollback could undo without moving either counter.

FTS5's own per-term counts (an ``fts5vocab`` table) were measured as a source and rejected: its
``doc`` column is computed by walking the term's whole position list, so a common term costs
milliseconds at 1M memories, and even a rare one costs more than the bounded count (see
``docs/sqlite-provider.md``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from paxm_provider_sqlite.retrieval.analyzer import Group

__all__ = ["DF_CAP", "DocumentFrequencies", "probe"]

#: Document-frequency probes stop counting here: beyond it a term is "common".
DF_CAP = 256
#: Most groups counted by one statement (SQLite's default limit is 32766 bound parameters;
#: this keeps each statement's text, and so the prepared-statement cache, small).
_BATCH = 64
#: Cached expressions per connection before the cache starts over (a long-running daemon
#: between writes sees many distinct words).
_MAX_ENTRIES = 8192


def _batch_sql(count: int) -> str:
    probe_one = "(SELECT count(*) FROM (SELECT rowid FROM memory_terms WHERE memory_terms MATCH ? LIMIT {cap}))"
    return "SELECT " + ", ".join([probe_one.format(cap=DF_CAP)] * count)


def probe(conn: sqlite3.Connection, expressions: Sequence[str]) -> list[int]:
    """Bounded document counts (``<= DF_CAP``) of FTS5 ``expressions``, one statement per 64."""
    out: list[int] = []
    for start in range(0, len(expressions), _BATCH):
        chunk = expressions[start : start + _BATCH]
        row = conn.execute(_batch_sql(len(chunk)), tuple(chunk)).fetchone()
        out.extend(int(value) for value in row)
    return out


class DocumentFrequencies:
    """A per-provider cache of bounded document frequencies, valid while nothing was written."""

    __slots__ = ("_conn", "_version", "_counts", "lookups", "probed")

    def __init__(self) -> None:
        self._conn: sqlite3.Connection | None = None
        self._version: tuple[int, int] = (-1, -1)
        self._counts: dict[str, int] = {}
        #: Groups asked for and groups actually counted (diagnostics for tests and benchmarks).
        self.lookups = 0
        self.probed = 0

    def of(self, conn: sqlite3.Connection, groups: Sequence[Group]) -> list[int]:
        """The bounded document frequency of each of ``groups``, in order."""
        expressions = [g.fts() for g in groups]
        self.lookups += len(expressions)
        if conn.in_transaction:
            # Uncommitted writes are visible here and a rollback would not move the counters.
            self.probed += len(expressions)
            return probe(conn, expressions)
        version = (conn.total_changes, int(conn.execute("PRAGMA data_version").fetchone()[0]))
        if conn is not self._conn or version != self._version or len(self._counts) > _MAX_ENTRIES:
            self._conn, self._version = conn, version
            self._counts = {}
        counts = self._counts
        missing = list(dict.fromkeys(e for e in expressions if e not in counts))
        if missing:
            self.probed += len(missing)
            counts.update(zip(missing, probe(conn, missing), strict=True))
        return [counts[e] for e in expressions]

    def clear(self) -> None:
        """Forget every count (and the connection they came from)."""
        self._conn, self._version, self._counts = None, (-1, -1), {}
