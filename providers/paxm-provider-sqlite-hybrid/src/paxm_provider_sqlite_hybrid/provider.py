"""``HybridSQLiteProvider`` (type ``sqlite-hybrid``): the SQLite store plus a semantic fallback.

Recall is a cascade, not a blend.  The lexical pipeline runs first; when its exact-phrase or
strict (every query term present) stage matched, that result stands untouched: identifiers,
versions and exact wording stay exactly as precise as with ``sqlite``.  Otherwise (only some
terms matched, or none) the memories are ranked by cosine similarity to the query, keeping
those above a cut-off calibrated on unrelated pairs and within a margin of the best one; if
none clears it, the lexical relaxed hits that cover at least half of the query's words stand.
Mixing the two scores was measured to be worse: partial word overlap points at distractors
exactly where paraphrase matters.

Semantic hits carry ``raw_score`` = cosine and ``raw_score_kind`` starting with
:data:`paxm_core.SEMANTIC_SCORE_KIND_PREFIX`, which the passive insertion filter reads.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paxm_core import (
    SEMANTIC_SCORE_KIND_PREFIX,
    Deadline,
    MemoryHit,
    MemoryItem,
    MemoryRef,
    ProviderConfig,
    ProviderError,
    SearchQuery,
    normalize_tier,
)
from paxm_core.protocols import CAP_DEADLINE_BOUND, CAP_LARGE_BATCHES
from paxm_provider_sqlite.attribution import apply_hit_attribution
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval import Candidate, Request
from paxm_provider_sqlite.retrieval.model import ROW_COLUMNS
from paxm_provider_sqlite.retrieval.search import filter_clause
from paxm_provider_sqlite_hybrid import calibration
from paxm_provider_sqlite_hybrid.embedder import DIM, MODEL_ID, Embedder, get_embedder
from paxm_provider_sqlite_hybrid.vectors import (
    VectorCache,
    ensure_schema,
    missing_rowids,
    store_vectors,
    vector_counts,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["SCORE_KIND", "HybridSQLiteProvider"]

log = logging.getLogger(__name__)

SCORE_KIND = f"{SEMANTIC_SCORE_KIND_PREFIX}cosine:{MODEL_ID}"
#: Lexical stages whose result stands (every query term matched).
_LEXICAL_WINS = frozenset({"exact", "strict", "recent"})
#: Most vector candidates checked against the SQL filters (tiers, workspace, expiry).
_VECTOR_CANDIDATES = 256
#: Candidates checked against the filters per SQL statement.
_FILTER_PAGE = 32


#: Query texts whose embedding is kept (a retried or repeated query costs no inference).
_QUERY_CACHE = 128


def _warm(provider: HybridSQLiteProvider) -> None:
    try:
        get_embedder()
    except Exception as exc:  # reported by health(); recall degrades to lexical meanwhile
        log.warning("sqlite-hybrid: embedding model failed to load: %s", exc)
        return
    try:
        provider._cache.warm(str(provider.path))
    except Exception as exc:  # the first semantic search loads the vectors instead
        log.warning("sqlite-hybrid %s: vectors not preloaded: %s", provider._name, exc)


class HybridSQLiteProvider(SQLiteProvider):
    """``sqlite`` plus an embedding per memory and the lexical-then-semantic cascade."""

    def __init__(
        self,
        name: str,
        config: ProviderConfig | None = None,
        embedder: Embedder | None = None,
        *,
        warm: bool = True,
    ) -> None:
        """``warm=False`` skips the background preload (short-lived CLI commands)."""
        super().__init__(name, config)
        self._embedder = embedder
        self._cache = VectorCache(MODEL_ID, DIM)
        self._schema_ready = False
        self._query_vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._query_lock = threading.Lock()
        #: Which path answered the last search: the lexical stage name or ``semantic``.
        self.last_path = ""
        self._warmer: threading.Thread | None = None
        if embedder is None and warm:
            # Load the model off the request path: a daemon's first recall must not pay ~1 s
            # and overrun the passive budget.  get_embedder() is idempotent and locked.
            # The vectors follow, through a connection of the thread's own.
            self._warmer = threading.Thread(target=_warm, args=(self,), name="paxm-hybrid-warmup", daemon=True)
            self._warmer.start()

    def capabilities(self) -> frozenset[str]:
        """The plain provider's, less ``deadline_bound`` and ``large_batches``.

        Embedding a query or a batch is model inference that no deadline interrupts, so calls
        stay on the bulkhead's lanes.  Batches stay at the default size: embedding 1,024
        memories at once is seconds of inference, against one delivery timeout.
        """
        return super().capabilities() - {CAP_DEADLINE_BOUND, CAP_LARGE_BATCHES}

    def close(self) -> None:
        """Close the store, after the warm-up thread (an interpreter exiting while ONNX Runtime
        builds its session in another thread aborts the process)."""
        if self._warmer is not None:
            self._warmer.join(timeout=60)
        super().close()

    def _model(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder()
        return self._embedder

    def _ensure(self, conn: object) -> None:
        if not self._schema_ready:
            ensure_schema(conn)  # type: ignore[arg-type]
            self._schema_ready = True

    def health(self, deadline: Deadline) -> None:
        """The store opens, and the embedding model loads and embeds a probe sentence."""
        super().health(deadline)
        try:
            vec = self._model().embed(["paxm health probe"])
        except Exception as exc:
            raise ProviderError(
                self._name,
                "health",
                f"embedding model {MODEL_ID} failed to load: {exc} (reinstall paxm[sqlite-hybrid])",
            ) from exc
        if vec.shape != (1, DIM):
            raise ProviderError(self._name, "health", f"embedding model {MODEL_ID} returned shape {vec.shape}")
        with self._db.session("health", deadline) as conn:
            self._ensure(conn)

    def vector_status(self, deadline: Deadline) -> tuple[int, int]:
        """``(memories, memories with a usable vector: current model and dimension)``."""
        with self._db.session("vector_status", deadline) as conn:
            self._ensure(conn)
            counts = vector_counts(conn, MODEL_ID, DIM)
        return counts["memories"], counts["vectors"]

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        """Store ``items`` (as ``sqlite``), then their vectors; a model failure never loses a memory."""
        refs = super().put_batch(items, deadline)
        if not refs:
            return refs
        try:
            vectors = self._model().embed([item.text for item in items])
        except Exception as exc:  # the memory is stored; `paxm hybrid backfill` adds the vector later
            log.warning("sqlite-hybrid %s: embedding failed, vector left for backfill: %s", self._name, exc)
            return refs
        self._write_vectors(deadline, [ref.id for ref in refs], vectors)
        return refs

    def _write_vectors(self, deadline: Deadline, ids: list[str], vectors: npt.NDArray[np.float32]) -> None:
        with self._db.session("put_vectors", deadline) as conn:
            self._ensure(conn)
            marks = ",".join("?" * len(ids))
            by_id = dict(conn.execute(f"SELECT id, rowid FROM memories WHERE id IN ({marks})", ids).fetchall())
            rows = []
            for index, item_id in enumerate(ids):
                rowid = by_id.get(item_id)
                if rowid is not None:
                    rows.append((int(rowid), vectors[index].tobytes()))
            conn.execute("BEGIN IMMEDIATE")
            store_vectors(conn, MODEL_ID, rows)
            conn.execute("COMMIT")

    def delete(self, ref: MemoryRef, deadline: Deadline) -> bool:
        """Delete as ``sqlite``: the ``hybrid_vectors_gc`` trigger drops the vector in the same
        transaction and logs the change, so every process's vector cache drops it at its next sync."""
        with self._db.session("delete", deadline) as conn:
            self._ensure(conn)  # the trigger must exist before the row goes
        return super().delete(ref, deadline)

    def backfill_step(self, batch: int, deadline: Deadline) -> tuple[int, int]:
        """Embed up to ``batch`` memories that lack a vector; ``(embedded, still missing)``.

        Each step commits, so an interrupted backfill resumes where it stopped.
        """
        with self._db.session("backfill", deadline) as conn:
            self._ensure(conn)
            todo = missing_rowids(conn, MODEL_ID, batch, DIM)
        if not todo:
            return 0, 0
        vectors = self._model().embed([text for _, text in todo])
        with self._db.session("backfill", deadline) as conn:
            conn.execute("BEGIN IMMEDIATE")
            store_vectors(conn, MODEL_ID, [(rowid, vectors[i].tobytes()) for i, (rowid, _) in enumerate(todo)])
            conn.execute("COMMIT")
        total, done = self.vector_status(deadline)
        return len(todo), total - done

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        """The cascade: lexical exact/strict stands; else semantic above the cut-off; else lexical relaxed."""
        lexical = super().search(query, deadline)
        stage = self.last_trace.selected if self.last_trace is not None else ""
        if stage in _LEXICAL_WINS:
            self.last_path = stage
            return lexical
        try:
            semantic = self._semantic(query, deadline)
        except ProviderError:
            raise
        except Exception as exc:  # a broken model degrades to lexical recall, loudly in the log
            log.warning("sqlite-hybrid %s: semantic recall failed, lexical result used: %s", self._name, exc)
            semantic = []
        if semantic:
            self.last_path = "semantic"
            return semantic
        self.last_path = stage
        return [hit for hit in lexical if hit.score >= calibration.RELAXED_FLOOR]

    def _query_vector(self, text: str) -> npt.NDArray[np.float32]:
        with self._query_lock:
            cached = self._query_vectors.get(text)
            if cached is not None:
                self._query_vectors.move_to_end(text)
                return cached
        vector: npt.NDArray[np.float32] = self._model().embed([text])[0]
        with self._query_lock:
            self._query_vectors[text] = vector
            while len(self._query_vectors) > _QUERY_CACHE:
                self._query_vectors.popitem(last=False)
        return vector

    @staticmethod
    def _admitted(
        conn: sqlite3.Connection, nearest: list[tuple[int, float]], where: str, args: Sequence[object], limit: int
    ) -> list[int]:
        """The most similar rowids that pass the SQL filters and lie within the margin of the best.

        The filters run on rowids only, a page of candidates at a time, most similar first:
        usually one page decides, so a query does not check hundreds of rows it cannot return.
        """
        chosen: list[int] = []
        floor: float | None = None
        for start in range(0, len(nearest), _FILTER_PAGE):
            page = nearest[start : start + _FILTER_PAGE]
            if floor is not None and page[0][1] < floor:
                break
            marks = ",".join("?" * len(page))
            passed = {
                int(r[0])
                for r in conn.execute(
                    f"SELECT m.rowid FROM memories AS m WHERE m.rowid IN ({marks}) AND {where}",
                    (*(rowid for rowid, _ in page), *args),
                )
            }
            for rowid, sim in page:
                if rowid not in passed:
                    continue
                if floor is None:
                    floor = sim - calibration.MARGIN
                if sim >= floor and len(chosen) < limit:
                    chosen.append(rowid)
            if len(chosen) >= limit:
                break
        return chosen

    def _semantic(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        request = Request(
            text=query.text,
            limit=query.limit,
            tiers=tuple(sorted({normalize_tier(t) for t in query.tiers if t.strip()})),
            workspace=query.metadata.get("workspace", "").strip(),
            filters=dict(query.filters),
        )
        vector = self._query_vector(query.text)
        deadline.check("sqlite-hybrid search")
        with self._db.session("search", deadline) as conn:
            self._ensure(conn)
            self._cache.sync(conn)
            nearest = self._cache.top(vector, calibration.CUTOFF, _VECTOR_CANDIDATES)
            if not nearest:
                return []
            where, args = filter_clause(request)
            cosine = dict(nearest)
            chosen = self._admitted(conn, nearest, where, args, request.result_limit)
            if not chosen:
                return []
            marks = ",".join("?" * len(chosen))
            rows = conn.execute(
                f"SELECT {ROW_COLUMNS} FROM memories AS m WHERE m.rowid IN ({marks})", chosen
            ).fetchall()
        found = [Candidate.from_row(row) for row in rows]
        found.sort(key=lambda c: c.created_at, reverse=True)
        found.sort(key=lambda c: cosine[c.rowid], reverse=True)
        hits = []
        for cand in found:
            sim = cosine[cand.rowid]
            cand.score = calibration.to_score(sim)
            hit = cand.to_hit(self._name).copy(raw_score=sim, raw_score_kind=SCORE_KIND)
            hits.append(apply_hit_attribution(hit))
        return hits
