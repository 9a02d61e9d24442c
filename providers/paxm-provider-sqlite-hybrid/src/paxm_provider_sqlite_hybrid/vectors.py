"""Vectors beside the memories: a table in the same SQLite file and an in-process matrix.

``hybrid_vectors`` is keyed by the memory's rowid (an upsert on a memory id keeps its rowid)
and a trigger drops a vector with its memory, whatever deletes it.  The matrix cache is
refreshed when another connection changed the file (``PRAGMA data_version``) and updated
in place for this process's own writes.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from paxm_provider_sqlite_hybrid import _threads  # noqa: F401  (before numpy loads)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["VectorCache", "ensure_schema", "missing_rowids", "store_vectors"]


_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS hybrid_vectors (
         memory_rowid INTEGER PRIMARY KEY,
         model TEXT NOT NULL,
         vec BLOB NOT NULL)""",
    """CREATE TRIGGER IF NOT EXISTS hybrid_vectors_gc AFTER DELETE ON memories
         BEGIN DELETE FROM hybrid_vectors WHERE memory_rowid = old.rowid; END""",
)


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the vector table and its clean-up trigger (idempotent)."""
    for statement in _SCHEMA:
        conn.execute(statement)


def store_vectors(conn: sqlite3.Connection, model: str, rows: list[tuple[int, bytes]]) -> None:
    """Upsert ``(memory_rowid, float32 bytes)`` rows (the caller owns the transaction)."""
    conn.executemany(
        "INSERT OR REPLACE INTO hybrid_vectors(memory_rowid, model, vec) VALUES (?, ?, ?)",
        [(rowid, model, blob) for rowid, blob in rows],
    )


def missing_rowids(conn: sqlite3.Connection, model: str, limit: int) -> list[tuple[int, str]]:
    """Up to ``limit`` ``(rowid, text)`` of memories without a vector from ``model``, oldest first."""
    rows = conn.execute(
        """SELECT m.rowid, m.text FROM memories AS m
           LEFT JOIN hybrid_vectors AS v ON v.memory_rowid = m.rowid AND v.model = ?
           WHERE v.memory_rowid IS NULL ORDER BY m.rowid LIMIT ?""",
        (model, limit),
    ).fetchall()
    return [(int(r[0]), str(r[1])) for r in rows]


class VectorCache:
    """All of one model's vectors as a float32 matrix with a parallel rowid array."""

    def __init__(self, model: str, dim: int) -> None:
        import numpy as np

        self.model = model
        self.dim = dim
        self.rowids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.matrix: npt.NDArray[np.float32] = np.zeros((0, dim), dtype=np.float32)
        self._version: int | None = None
        self._pending: dict[int, npt.NDArray[np.float32]] = {}

    def sync(self, conn: sqlite3.Connection) -> None:
        """Reload when another connection wrote since the last look; fold in own writes."""
        import numpy as np

        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._version:
            rows = conn.execute(
                "SELECT memory_rowid, vec FROM hybrid_vectors WHERE model = ?", (self.model,)
            ).fetchall()
            self.rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            blob = b"".join(r[1] for r in rows)
            self.matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), self.dim).copy()
            self._version = version
            self._pending.clear()
            return
        if self._pending:
            self._fold()

    def invalidate(self) -> None:
        """Reload at the next :meth:`sync`: this process deleted rows (``data_version`` only sees others')."""
        self._version = None
        self._pending.clear()

    def add(self, rowids: list[int], vectors: npt.NDArray[np.float32]) -> None:
        """Record this process's own writes (folded in at the next :meth:`sync`)."""
        for rowid, vec in zip(rowids, vectors, strict=True):
            self._pending[rowid] = vec

    def _fold(self) -> None:
        import numpy as np

        index = {int(r): i for i, r in enumerate(self.rowids)}
        fresh_ids: list[int] = []
        fresh_vecs: list[npt.NDArray[np.float32]] = []
        for rowid, vec in self._pending.items():
            at = index.get(rowid)
            if at is None:
                fresh_ids.append(rowid)
                fresh_vecs.append(vec)
            else:
                self.matrix[at] = vec
        if fresh_ids:
            self.rowids = np.concatenate([self.rowids, np.array(fresh_ids, dtype=np.int64)])
            self.matrix = np.vstack([self.matrix, np.stack(fresh_vecs)])
        self._pending.clear()

    def top(self, query: npt.NDArray[np.float32], cutoff: float, limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` ``(rowid, cosine)`` at or above ``cutoff``, most similar first."""
        import numpy as np

        if not len(self.rowids):
            return []
        sims = self.matrix @ query
        above = np.flatnonzero(sims >= cutoff)
        if len(above) > limit:
            above = above[np.argpartition(-sims[above], limit - 1)[:limit]]
        order = above[np.argsort(-sims[above], kind="stable")]
        return [(int(self.rowids[i]), float(sims[i])) for i in order]
