"""Vectors beside the memories: a table in the same SQLite file and an in-process 4-bit matrix
(``docs/hybrid-retrieval.md``, Costs).

``hybrid_vectors`` holds float32 vectors by memory rowid; triggers drop a vector with its memory
and log every change to ``hybrid_changes``, which :class:`VectorCache` applies at each query (one
index lookup when nothing changed).  In memory a vector is 4-bit codes with a scale plus its sign
bits: the codes only choose candidates (a sign-bit Hamming pre-filter first, from
:data:`PREFILTER_FROM` rows), and the caller re-scores them from the stored float32 vectors
(:func:`exact_cosines`), so the ranking is the float32 one.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import TYPE_CHECKING

from paxm_provider_sqlite_hybrid import _process  # before numpy loads: single-threaded BLAS

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    #: A cache's arrays: packed 4-bit codes, scales, sign bits, rowids.
    _Arrays = tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32], npt.NDArray[np.uint8], npt.NDArray[np.int64]]

__all__ = [
    "ESTIMATE_ERROR",
    "LOG_KEEP",
    "PREFILTER_CANDIDATES",
    "PREFILTER_FROM",
    "RESCORE_WINDOW",
    "VectorCache",
    "cosines",
    "ensure_schema",
    "exact_cosines",
    "missing_rowids",
    "store_vectors",
    "vector_counts",
]

#: Change-log entries kept; a cache more than this many writes behind reloads everything.
LOG_KEEP = 50_000
#: Vectors from which a search pre-selects candidates by sign-bit Hamming distance (below it,
#: estimating every row from its codes costs under half a millisecond).
PREFILTER_FROM = 4096
#: Candidates the pre-filter keeps for the 4-bit estimate (at least 8x the asked limit).
PREFILTER_CANDIDATES = 2048
#: Largest gap between a 4-bit estimate and the exact cosine a search allows for: a row whose
#: estimate is this much under the cut-off is still a candidate (0.038 measured over 400k
#: pairs of real MiniLM vectors, standard deviation 0.007).
ESTIMATE_ERROR = 0.05
#: How far under another candidate's estimate a candidate's may be and still be re-scored
#: beside it: twice 0.02, three standard deviations of one estimate's error.  A candidate
#: further under cannot have the higher exact cosine but for a one-in-a-thousand error.
RESCORE_WINDOW = 0.04
#: Rows read per fetch while loading (bounds the transient Python ``bytes`` objects).
_CHUNK = 4096

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS hybrid_vectors (
         memory_rowid INTEGER PRIMARY KEY,
         model TEXT NOT NULL,
         vec BLOB NOT NULL)""",
    """CREATE TRIGGER IF NOT EXISTS hybrid_vectors_gc AFTER DELETE ON memories
         BEGIN DELETE FROM hybrid_vectors WHERE memory_rowid = old.rowid; END""",
    """CREATE TABLE IF NOT EXISTS hybrid_changes (
         seq INTEGER PRIMARY KEY AUTOINCREMENT,
         memory_rowid INTEGER NOT NULL)""",
    # INSERT OR REPLACE fires only the insert trigger (recursive triggers are off): an insert
    # of a known rowid is an update for the cache, so that is all it needs.
    """CREATE TRIGGER IF NOT EXISTS hybrid_vectors_logged_put AFTER INSERT ON hybrid_vectors
         BEGIN INSERT INTO hybrid_changes(memory_rowid) VALUES (new.memory_rowid); END""",
    """CREATE TRIGGER IF NOT EXISTS hybrid_vectors_logged_delete AFTER DELETE ON hybrid_vectors
         BEGIN INSERT INTO hybrid_changes(memory_rowid) VALUES (old.memory_rowid); END""",
)


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the vector table, the change log and their triggers (idempotent)."""
    for statement in _SCHEMA:
        conn.execute(statement)


def store_vectors(conn: sqlite3.Connection, model: str, rows: list[tuple[int, bytes]]) -> None:
    """Upsert ``(memory_rowid, float32 bytes)`` rows and prune the change log.

    The caller owns the transaction.
    """
    conn.executemany(
        "INSERT OR REPLACE INTO hybrid_vectors(memory_rowid, model, vec) VALUES (?, ?, ?)",
        [(rowid, model, blob) for rowid, blob in rows],
    )
    newest = conn.execute("SELECT max(seq) FROM hybrid_changes").fetchone()[0]
    if newest is not None and newest % 1000 < len(rows):  # about once per thousand writes
        conn.execute("DELETE FROM hybrid_changes WHERE seq <= ?", (int(newest) - LOG_KEEP,))


def missing_rowids(conn: sqlite3.Connection, model: str, limit: int, dim: int) -> list[tuple[int, str]]:
    """Up to ``limit`` ``(rowid, text)`` of memories without a usable vector, oldest first.

    Usable: from ``model`` and ``dim`` float32 wide; a vector of another model or dimension is
    replaced by the backfill.
    """
    rows = conn.execute(
        """SELECT m.rowid, m.text FROM memories AS m
           LEFT JOIN hybrid_vectors AS v ON v.memory_rowid = m.rowid AND v.model = ? AND length(v.vec) = ?
           WHERE v.memory_rowid IS NULL ORDER BY m.rowid LIMIT ?""",
        (model, dim * 4, limit),
    ).fetchall()
    return [(int(r[0]), str(r[1])) for r in rows]


def vector_counts(conn: sqlite3.Connection, model: str, dim: int) -> dict[str, int]:
    """``memories``, ``vectors`` (usable: this model and dimension), ``other_model``, ``wrong_dim``."""
    memories = int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    usable = other = wrong = 0
    has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'hybrid_vectors'").fetchone()
    if has_table:
        rows = conn.execute(
            """SELECT v.model = ?, length(v.vec) = ?, count(*) FROM hybrid_vectors AS v
               JOIN memories AS m ON m.rowid = v.memory_rowid GROUP BY 1, 2""",
            (model, dim * 4),
        ).fetchall()
        for same_model, same_dim, count in rows:
            if not same_model:
                other += int(count)
            elif not same_dim:
                wrong += int(count)
            else:
                usable += int(count)
    return {"memories": memories, "vectors": usable, "other_model": other, "wrong_dim": wrong}


def quantize(vectors: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Symmetric per-row int8: ``vectors ~= codes * scales[:, None]`` (the query's form)."""
    import numpy as np

    peak = np.abs(vectors).max(axis=1)
    scales = (np.where(peak > 0, peak, 1.0) / 127.0).astype(np.float32)
    codes = np.rint(vectors / scales[:, None]).clip(-127, 127).astype(np.int8)
    return codes, scales


def quantize4(vectors: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """Symmetric per-row 4-bit codes (-7..7), two a byte: ``(packed, scales)``.

    Byte ``j`` of a row holds dimension ``j`` in its high nibble and ``j + dim/2`` in its low
    one, each offset by 8; :func:`unpack4` gives the int8 codes back.
    """
    import numpy as np

    peak = np.abs(vectors).max(axis=1)
    scales = (np.where(peak > 0, peak, 1.0) / 7.0).astype(np.float32)
    codes = (np.rint(vectors / scales[:, None]).clip(-7, 7) + 8).astype(np.uint8)
    half = vectors.shape[1] // 2
    packed: npt.NDArray[np.uint8] = (codes[:, :half] << 4) | codes[:, half:]
    return packed, scales


def unpack4(packed: npt.NDArray[np.uint8]) -> npt.NDArray[np.int8]:
    """The int8 codes (-7..7) of :func:`quantize4`'s packed rows."""
    import numpy as np

    half = packed.shape[1]
    codes = np.empty((packed.shape[0], 2 * half), dtype=np.int8)
    np.right_shift(packed, 4, out=codes[:, :half].view(np.uint8))
    np.bitwise_and(packed, 15, out=codes[:, half:].view(np.uint8))
    codes -= 8
    return codes


def cosines(query: npt.NDArray[np.float32], blobs: list[bytes]) -> list[float]:
    """The exact cosine of ``query`` with each stored float32 vector (``blobs``, the query's width)."""
    import numpy as np

    if not blobs:
        return []
    floats = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    sims: list[float] = (floats @ query.astype(np.float32)).astype(np.float64).tolist()
    return sims


def exact_cosines(
    conn: sqlite3.Connection, model: str, query: npt.NDArray[np.float32], rowids: list[int]
) -> dict[int, float]:
    """The exact cosine of ``query`` with each stored float32 vector of ``rowids``, by rowid.

    A rowid without a vector of ``model`` and the query's dimension (deleted meanwhile) is left out.
    """
    if not rowids:
        return {}
    width = query.shape[0] * 4
    rows = [
        (int(rowid), blob)
        for rowid, blob in conn.execute(
            f"SELECT memory_rowid, vec FROM hybrid_vectors WHERE memory_rowid IN ({','.join('?' * len(rowids))})"
            " AND model = ?",
            (*rowids, model),
        )
        if len(blob) == width
    ]
    return dict(zip((rowid for rowid, _ in rows), cosines(query, [blob for _, blob in rows]), strict=True))


def _newest_seq(conn: sqlite3.Connection) -> tuple[int, int]:
    row = conn.execute("SELECT (SELECT max(seq) FROM hybrid_changes), (SELECT min(seq) FROM hybrid_changes)").fetchone()
    return int(row[0] or 0), int(row[1] or 0)


class VectorCache:
    """One model's vectors as contiguous 4-bit codes, their scales, sign bits and rowids.

    Rows ``[0, size)`` are live; capacity grows by doubling so a put does not copy the
    matrix.  Thread-safe: the provider's searches hold its connection lock, a warm-up thread
    may :meth:`load` through a connection of its own.
    """

    def __init__(self, model: str, dim: int) -> None:
        import numpy as np

        self.model = model
        self.dim = dim
        self.size = 0
        self._codes: npt.NDArray[np.uint8] = np.zeros((0, dim // 2), dtype=np.uint8)
        self._scales: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self._rowids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        #: Packed sign bits of the float vectors (same capacity): the pre-filter's sketches.
        self._bits: npt.NDArray[np.uint8] = np.zeros((0, dim // 8), dtype=np.uint8)
        #: Newest change-log ``seq`` reflected here; ``None`` before the first load.
        self.seq: int | None = None
        self._lock = threading.Lock()
        self._load_lock = threading.RLock()

    @property
    def rowids(self) -> npt.NDArray[np.int64]:
        """The live rows' memory rowids (a view)."""
        return self._rowids[: self.size]

    def nbytes(self) -> int:
        """Bytes held by the codes, scales, sign bits and rowids (allocated capacity)."""
        return int(self._codes.nbytes + self._scales.nbytes + self._rowids.nbytes + self._bits.nbytes)

    @property
    def prefiltered(self) -> bool:
        """Whether searches pre-select candidates by sign bits (size at least :data:`PREFILTER_FROM`)."""
        return self.size >= PREFILTER_FROM

    # -- keeping up with the table ---------------------------------------------------------

    def load(self, conn: sqlite3.Connection) -> None:
        """Read every vector of the model in one snapshot (``conn`` must not be in a transaction)."""
        with self._load_lock:
            conn.execute("BEGIN")
            try:
                newest, _ = _newest_seq(conn)
                # rowids are dense in practice: the largest is a good first capacity
                largest = conn.execute("SELECT max(memory_rowid) FROM hybrid_vectors").fetchone()[0]
                cursor = conn.execute("SELECT memory_rowid, vec FROM hybrid_vectors WHERE model = ?", (self.model,))
                arrays, size = self._read(cursor, int(largest or 0))
            finally:
                conn.execute("COMMIT")
            _process.trim()  # the row batches' bytes and float copies are freed: give them back
            with self._lock:
                self._codes, self._scales, self._bits, self._rowids = arrays
                self.size = size
                self.seq = newest

    def warm(self, path: str) -> None:
        """:meth:`load` through a connection of its own, off the provider's lock (a no-op if
        the store or its vector table does not exist yet, or is already loaded)."""
        import os

        from paxm_core.private_files import connect_private, private_umask

        if self.seq is not None or not os.path.exists(path):
            return
        try:
            # The provider's own checks (no link, a regular file of the user's) and umask 077:
            # opening may create the -wal/-shm siblings, 0600 like the provider's own.
            conn = connect_private(path, timeout=5.0, isolation_level=None)
        except (OSError, sqlite3.Error):
            return  # the provider's open reports it, naming the config key
        try:
            with self._load_lock:
                with private_umask():
                    known = conn.execute(
                        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories'"
                    ).fetchone()
                    if self.seq is None and known:
                        ensure_schema(conn)  # a store written before the change log existed
                if self.seq is None and known:
                    self.load(conn)
        except sqlite3.Error:
            pass  # no schema yet: the first search loads through the provider's connection
        finally:
            conn.close()

    def sync(self, conn: sqlite3.Connection) -> None:
        """Bring the cache up to date with the table: load once, then apply logged changes."""
        if self.seq is None:
            with self._load_lock:  # a warm-up load may be under way: wait for it
                if self.seq is None:
                    self.load(conn)
            return
        newest, oldest = _newest_seq(conn)
        if newest == self.seq:
            return
        if newest < self.seq or (oldest and oldest > self.seq + 1):
            self.load(conn)  # the log was pruned past us (or the file was replaced)
            return
        changed = conn.execute(
            """SELECT DISTINCT c.memory_rowid, v.vec FROM hybrid_changes AS c
               LEFT JOIN hybrid_vectors AS v ON v.memory_rowid = c.memory_rowid AND v.model = ?
               WHERE c.seq > ? AND c.seq <= ?""",
            (self.model, self.seq, newest),
        ).fetchall()
        self._apply(changed, newest)

    def _read(self, cursor: sqlite3.Cursor, largest: int) -> tuple[_Arrays, int]:
        capacity = max(largest, 16)
        arrays = self._allocate(capacity)
        size = 0
        width = self.dim * 4
        while batch := cursor.fetchmany(_CHUNK):
            good = [(r[0], r[1]) for r in batch if len(r[1]) == width]  # other dimensions: not ours
            if not good:
                continue
            if size + len(good) > capacity:
                capacity = max(capacity * 2, size + len(good))
                arrays = self._grown(arrays, size, capacity)
            self._encode(arrays, size, good)
            size += len(good)
        if size < capacity * 3 // 4:  # sparse rowids: give the slack back
            codes, scales, bits, rowids = arrays
            arrays = (codes[:size].copy(), scales[:size].copy(), bits[:size].copy(), rowids[:size].copy())
        return arrays, size

    def _allocate(self, capacity: int) -> _Arrays:
        import numpy as np

        return (
            np.empty((capacity, self.dim // 2), dtype=np.uint8),
            np.empty(capacity, dtype=np.float32),
            np.empty((capacity, self.dim // 8), dtype=np.uint8),
            np.empty(capacity, dtype=np.int64),
        )

    def _grown(self, arrays: _Arrays, size: int, capacity: int) -> _Arrays:
        """New arrays of ``capacity`` rows holding the first ``size`` rows of ``arrays``."""
        grown = self._allocate(capacity)
        grown[0][:size], grown[1][:size] = arrays[0][:size], arrays[1][:size]
        grown[2][:size], grown[3][:size] = arrays[2][:size], arrays[3][:size]
        return grown

    def _encode(self, arrays: _Arrays, at: int | list[int], rows: list[tuple[int, bytes]]) -> None:
        """Write ``rows`` (``(rowid, float32 bytes)``) at position ``at`` on, or at the positions ``at``."""
        import numpy as np

        floats = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(-1, self.dim)
        where = slice(at, at + len(rows)) if isinstance(at, int) else at
        codes, scales, bits, rowids = arrays
        codes[where], scales[where] = quantize4(floats)
        bits[where] = np.packbits(floats > 0, axis=1)
        rowids[where] = [rowid for rowid, _ in rows]

    def _arrays(self) -> _Arrays:
        return self._codes, self._scales, self._bits, self._rowids

    def _apply(self, changed: list[tuple[int, bytes | None]], newest: int) -> None:
        import numpy as np

        latest: dict[int, bytes | None] = {}
        for rowid, blob in changed:
            latest[int(rowid)] = blob if blob is not None and len(blob) == self.dim * 4 else None
        with self._lock:
            keys = np.fromiter(latest, dtype=np.int64, count=len(latest))
            where = np.flatnonzero(np.isin(self._rowids[: self.size], keys))
            position = {int(self._rowids[i]): int(i) for i in where}
            gone: list[int] = []
            fresh: list[tuple[int, bytes]] = []
            updates: list[tuple[int, bytes]] = []
            for rowid, blob in latest.items():
                at = position.get(rowid)
                if blob is None:
                    if at is not None:
                        gone.append(at)
                elif at is None:
                    fresh.append((rowid, blob))
                else:
                    updates.append((at, blob))
            if updates:
                self._encode(
                    self._arrays(), [at for at, _ in updates], [(int(self._rowids[at]), b) for at, b in updates]
                )
            self._remove(sorted(gone, reverse=True))
            if fresh:
                self._append(fresh)
            self.seq = newest

    def _remove(self, positions: list[int]) -> None:
        # Highest first, each hole filled with the current last row: O(1) per removal.
        for at in positions:
            last = self.size - 1
            if at != last:
                for array in self._arrays():
                    array[at] = array[last]
            self.size = last

    def _append(self, rows: list[tuple[int, bytes]]) -> None:
        end = self.size + len(rows)
        if end > len(self._rowids):
            capacity = max(16, end, 2 * len(self._rowids))
            self._codes, self._scales, self._bits, self._rowids = self._grown(self._arrays(), self.size, capacity)
        self._encode(self._arrays(), self.size, rows)
        self.size = end

    # -- search ---------------------------------------------------------------------------

    def top(
        self, query: npt.NDArray[np.float32], cutoff: float, limit: int, *, exact: bool = False
    ) -> list[tuple[int, float]]:
        """Up to ``limit`` candidates ``(rowid, estimated cosine)``, highest estimate first.

        A row is a candidate when its estimate reaches ``cutoff`` less :data:`ESTIMATE_ERROR`:
        the caller re-scores the ones it keeps (:func:`exact_cosines`) and applies ``cutoff``
        to the exact cosine.  From :data:`PREFILTER_FROM` vectors on, only the pre-filter's
        candidates are estimated (``exact=True`` estimates every row: the reference the
        pre-filter is measured against).
        """
        import numpy as np
        import simsimd

        with self._lock:
            if not self.size:
                return []
            q_codes, q_scale = quantize(query.reshape(1, -1).astype(np.float32))
            rows: npt.NDArray[np.intp] | None = None
            keep = max(PREFILTER_CANDIDATES, 8 * limit)
            if not exact and self.prefiltered and keep < self.size:
                q_bits = np.packbits(query.reshape(1, -1) > 0, axis=1)
                ham = np.asarray(
                    simsimd.cdist(q_bits, self._bits[: self.size], metric="hamming", dtype="bin8", threads=1)
                ).reshape(-1)
                rows = np.argpartition(ham, keep - 1)[:keep]
                codes, scales = unpack4(self._codes[rows]), self._scales[rows]
            else:
                codes, scales = unpack4(self._codes[: self.size]), self._scales[: self.size]
            dots = np.asarray(simsimd.cdist(q_codes, codes, metric="dot", threads=1))
            sims = dots.reshape(-1).astype(np.float32) * scales * q_scale[0]
            above = np.flatnonzero(sims >= cutoff - ESTIMATE_ERROR)
            if len(above) > limit:
                above = above[np.argpartition(-sims[above], limit - 1)[:limit]]
            order = above[np.argsort(-sims[above], kind="stable")]
            where = order if rows is None else rows[order]
            # tolist() converts in C: per-element int()/float() cost ~1 us each for 256 rows
            return list(zip(self._rowids[where].tolist(), sims[order].astype(np.float64).tolist(), strict=True))
