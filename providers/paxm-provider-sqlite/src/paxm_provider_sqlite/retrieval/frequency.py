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
#: Most groups counted by one statement (this keeps each statement's text, and so the
#: prepared-statement cache, small).
_BATCH = 64
#: Cached expressions per connection before the cache starts over (a long-running daemon
#: between writes sees many distinct words).
_MAX_ENTRIES = 8192


_PROBE_ONE = f"(SELECT count(*) FROM (SELECT rowid FROM memory_terms WHERE memory_terms MATCH ? LIMIT {DF_CAP}))"
_VERSION = "(SELECT data_version FROM pragma_data_version())"


def _batch_sql(count: int, with_version: bool) -> str:
    return "SELECT " + ", ".join(([_VERSION] if with_version else []) + [_PROBE_ONE] * count)


def probe(conn: sqlite3.Connection, expressions: Sequence[str]) -> list[int]:
    """Bounded document counts (``<= DF_CAP``) of FTS5 ``expressions``, one statement per 64."""
    return _probe(conn, expressions, with_version=False)[1]


def _probe(conn: sqlite3.Connection, expressions: Sequence[str], *, with_version: bool) -> tuple[int, list[int]]:
    """(``PRAGMA data_version`` read in the first statement's snapshot, the counts)."""
    version = -1
    out: list[int] = []
    for start in range(0, max(1, len(expressions)), _BATCH):
        chunk = expressions[start : start + _BATCH]
        first = with_version and start == 0
        if not chunk and not first:
            break
        row = conn.execute(_batch_sql(len(chunk), first), tuple(chunk)).fetchone()
        if first:
            version, row = int(row[0]), row[1:]
        out.extend(int(value) for value in row)
    return version, out


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
        changes = conn.total_changes
        counts = self._counts
        if conn is self._conn and changes == self._version[0] and len(counts) <= _MAX_ENTRIES:
            # Possibly still valid: only another connection's commit can have changed them.
            if all(e in counts for e in expressions):
                version = int(conn.execute("PRAGMA data_version").fetchone()[0])
                if version == self._version[1]:
                    return [counts[e] for e in expressions]
                counts = {}
        else:
            counts = {}
        # The version is read in the same statement (one snapshot) as the first counts, so a
        # commit racing this lookup leaves counts older than their tag, never newer.
        missing = list(dict.fromkeys(e for e in expressions if e not in counts))
        version, found = _probe(conn, missing, with_version=True)
        self.probed += len(missing)
        if counts and version != self._version[1]:
            # Another connection committed since the kept counts were taken.
            counts = {}
            missing = list(dict.fromkeys(expressions))
            version, found = _probe(conn, missing, with_version=True)
            self.probed += len(missing)
        counts.update(zip(missing, found, strict=True))
        self._conn, self._version, self._counts = conn, (changes, version), counts
        return [counts[e] for e in expressions]

    def clear(self) -> None:
        """Forget every count (and the connection they came from)."""
        self._conn, self._version, self._counts = None, (-1, -1), {}
