"""Document frequencies of query groups: bounded counts from the term index.

The plan (``search.py``) needs, per query group, how many memories contain it, but only up to
``DF_CAP``: beyond the cap a group is simply "common".  Each count is an FTS5 lookup bounded by
``LIMIT DF_CAP``, and a query's groups are counted in one statement (one round trip instead of
one per group: a 300-word prompt probes 64 groups).  FTS5's own per-term counts (``fts5vocab``)
walk a term's whole position list, which costs milliseconds for a common term at 1M memories.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

__all__ = ["DF_CAP", "probe"]

#: Document-frequency probes stop counting here: beyond it a term is "common".
DF_CAP = 256
#: Most groups counted by one statement (keeps the prepared-statement cache small).
_BATCH = 64

_PROBE_ONE = f"(SELECT count(*) FROM (SELECT rowid FROM memory_terms WHERE memory_terms MATCH ? LIMIT {DF_CAP}))"


def probe(conn: sqlite3.Connection, expressions: Sequence[str]) -> list[int]:
    """Bounded document counts (``<= DF_CAP``) of FTS5 ``expressions``, one statement per 64."""
    out: list[int] = []
    for start in range(0, len(expressions), _BATCH):
        chunk = expressions[start : start + _BATCH]
        row = conn.execute("SELECT " + ", ".join([_PROBE_ONE] * len(chunk)), tuple(chunk)).fetchone()
        out.extend(int(value) for value in row)
    return out
