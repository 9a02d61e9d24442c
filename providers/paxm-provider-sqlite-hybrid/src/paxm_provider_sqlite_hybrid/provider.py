"""``HybridSQLiteProvider`` (type ``sqlite-hybrid``): the SQLite store plus an embedding model.

Recall fuses the dense ranking into the lexical one (:mod:`.fusion`); when the semantic part
cannot finish in time the lexical hits come alone, marked :data:`LEXICAL_ONLY_KIND`.  A write
stores its memories and their vectors in one transaction.  Hits found by meaning carry the cosine
as ``raw_score`` under :data:`paxm_core.SEMANTIC_SCORE_KIND_PREFIX` (read by the passive filter).
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paxm_core import (
    SEMANTIC_SCORE_KIND_PREFIX,
    Deadline,
    DeadlineExceeded,
    MemoryHit,
    MemoryItem,
    MemoryRef,
    ProviderConfig,
    ProviderError,
    SearchQuery,
)
from paxm_core.api.protocols import CAP_DEADLINE_BOUND, CAP_LARGE_BATCHES
from paxm_provider_sqlite._db import immediate
from paxm_provider_sqlite.attribution import apply_hit_attribution
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.analyzer import analyze_query
from paxm_provider_sqlite.retrieval.model import ROW_COLUMNS, Candidate, Request
from paxm_provider_sqlite.retrieval.ranking import asks_only
from paxm_provider_sqlite.retrieval.search import MAX_STRICT_GROUPS, filter_clause
from paxm_provider_sqlite_hybrid import calibration, fusion
from paxm_provider_sqlite_hybrid.embedder import DIM, MODEL_ID, Embedder, ModelBusy, get_embedder, loaded_embedder
from paxm_provider_sqlite_hybrid.vectors import (
    RESCORE_WINDOW,
    VectorCache,
    cosines,
    ensure_schema,
    missing_rowids,
    store_vectors,
    vector_counts,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["LEXICAL_ONLY_KIND", "SCORE_KIND", "HybridSQLiteProvider"]

log = logging.getLogger(__name__)

SCORE_KIND = f"{SEMANTIC_SCORE_KIND_PREFIX}cosine:{MODEL_ID}"
#: ``raw_score_kind`` prefix of lexical hits returned without the semantic part (then
#: ``:model-loading``, ``:model-busy``, ``:deadline`` or ``:error``).
LEXICAL_ONLY_KIND = "sqlite_lexical_only"
#: Result size for a query without a limit (the lexical store's default).
_DEFAULT_LIMIT = 50
#: Each ranking contributes at least this many candidates to the fusion.
_FUSION_POOL = 20
#: Seconds a search keeps for the vector scan and the row loads after embedding the query.
_SEARCH_RESERVE = 0.02
#: First estimate of one query's embedding time (seconds), before any was measured.
_EMBED_COST = 0.03
#: Most vector candidates checked against the SQL filters (tiers, workspace, expiry).
_VECTOR_CANDIDATES = 256
#: Candidates checked against the filters per SQL statement.
_FILTER_PAGE = 64
#: Vector candidates re-scored from their stored vectors at most, unless twice the pool is
#: more (each costs a row read: ~10 us).
_RESCORED = 64
#: Query texts whose embedding is kept (a retried or repeated query costs no inference).
_QUERY_CACHE = 128


def _warm(provider: HybridSQLiteProvider) -> None:
    try:
        get_embedder()
    except Exception as exc:  # reported by health(); recall degrades to lexical meanwhile
        log.warning("sqlite-hybrid: embedding model failed to load: %s", exc)
        return
    finally:
        provider._model_ready.set()
    try:
        provider._cache.warm(str(provider.path))
    except Exception as exc:  # the first semantic search loads the vectors instead
        log.warning("sqlite-hybrid %s: vectors not preloaded: %s", provider._name, exc)


class HybridSQLiteProvider(SQLiteProvider):
    """``sqlite`` plus an embedding per memory, and recall fusing the lexical and dense rankings."""

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
        #: Recent query embedding time (seconds, moving average): no inference starts that
        #: would end past the deadline.
        self._embed_cost = _EMBED_COST
        #: The vectors of the put running on this thread, for :meth:`_write_sidecars`.
        self._pending = threading.local()
        #: Which path answered the last search: the lexical stage name or ``semantic``.
        self.last_path = ""
        self._warmer: threading.Thread | None = None
        #: Set once the warm-up thread has tried to load the model (loaded or failed).
        self._model_ready = threading.Event()
        if embedder is None and warm:
            # Load the model off the request path: a daemon's first recall must not pay ~1 s
            # and overrun the passive budget.  get_embedder() is idempotent and locked.
            # The vectors follow, through a connection of the thread's own.
            self._warmer = threading.Thread(target=_warm, args=(self,), name="paxm-hybrid-warmup", daemon=True)
            self._warmer.start()

    def capabilities(self) -> frozenset[str]:
        """The plain provider's, less ``deadline_bound`` and ``large_batches``: inference is not
        interruptible, and 1,024 memories are seconds of it."""
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

    def _ensure(self, conn: sqlite3.Connection) -> None:
        if not self._schema_ready:
            ensure_schema(conn)
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
        """Store ``items`` with their vectors in one transaction: all of it or nothing.

        The texts are embedded first, outside the store's lock; the rows and the vectors then
        commit together, and only if ``deadline`` has not passed (a caller that gave up sees
        nothing stored, so its retry stores each memory once).  A model that fails to load is
        not a timeout: the rows are stored without vectors, which `paxm hybrid backfill` adds.
        """
        if not items or any(not item.text.strip() for item in items):
            return super().put_batch(items, deadline)  # nothing to store, or the plain error
        vectors: npt.NDArray[np.float32] | None
        left = deadline.remaining()
        try:
            vectors = self._model().embed([i.text for i in items], deadline, wait=left if math.isfinite(left) else None)
        except DeadlineExceeded:
            raise
        except ModelBusy as exc:
            raise DeadlineExceeded(f"{self._name} put: {exc}") from exc
        except Exception as exc:  # the memory is stored; `paxm hybrid backfill` adds the vector later
            log.warning("sqlite-hybrid %s: embedding failed, vector left for backfill: %s", self._name, exc)
            vectors = None
        self._pending.vectors = vectors
        try:
            return super().put_batch(items, deadline)
        finally:
            self._pending.vectors = None

    def _write_sidecars(self, conn: sqlite3.Connection, ids: list[str], deadline: Deadline) -> None:
        """The put's vectors, in its transaction; the last check of the deadline before the commit."""
        vectors: npt.NDArray[np.float32] | None = getattr(self._pending, "vectors", None)
        self._ensure(conn)
        if vectors is not None:
            marks = ",".join("?" * len(set(ids)))
            by_id = dict(
                conn.execute(f"SELECT id, rowid FROM memories WHERE id IN ({marks})", list(set(ids))).fetchall()
            )
            rows = {int(by_id[item_id]): vectors[index].tobytes() for index, item_id in enumerate(ids)}
            store_vectors(conn, MODEL_ID, list(rows.items()))
        deadline.check(f"{self._name} put")

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
            with immediate(conn):
                store_vectors(conn, MODEL_ID, [(rowid, vectors[i].tobytes()) for i, (rowid, _) in enumerate(todo)])
        total, done = self.vector_status(deadline)
        return len(todo), total - done

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        """The lexical ranking fused with the dense one (see :mod:`.fusion`); ``limit`` filled.

        When the semantic part cannot finish in time (the model is still loading, busy with
        another caller's inference, or the query would not be embedded before ``deadline``)
        the lexical hits are returned alone and say so in ``raw_score_kind``
        (:data:`LEXICAL_ONLY_KIND`), which the recall's provider diagnostics list.
        """
        limit = query.limit if query.limit > 0 else _DEFAULT_LIMIT
        pool = max(limit, _FUSION_POOL)
        lexical = super().search(query.replace(limit=pool), deadline)
        stage = self.last_trace.selected if self.last_trace is not None else ""
        if stage in fusion.LEADING_STAGES and len(lexical) >= limit:
            self.last_path = stage  # every place goes to a hit with every query term: no embedding
            return lexical[:limit]
        try:
            dense = self._dense(query, deadline, pool)
        except (ProviderError, DeadlineExceeded):
            raise
        except _SemanticSkipped as exc:
            self.last_path = f"lexical:{exc}"
            return [_lexical_only(hit, str(exc)) for hit in lexical[:limit]]
        except Exception as exc:  # a broken model degrades to lexical recall, loudly in the log
            log.warning("sqlite-hybrid %s: semantic recall failed, lexical result used: %s", self._name, exc)
            self.last_path = "lexical:error"
            return [_lexical_only(hit, "error") for hit in lexical[:limit]]
        by_key = {hit.id: hit for hit in lexical}
        groups = analyze_query(query.text).groups
        # a turn the words found asks only if its answer holds none of them; one meaning alone
        # found, only if its answer says nothing (a paraphrase's answer shares no word with it)
        asking = {h.id for h in lexical if asks_only(h.text, groups)}
        asking |= {c.id for c, _ in dense if c.id not in by_key and fusion.says_nothing(c.text)}
        # A long prompt's partial matches are scored by its rarest words, and one vector of a
        # long text says little about each of them: the trap rule is for questions.
        short = len(groups) <= MAX_STRICT_GROUPS
        cosines = self._lexical_cosines(query.text, lexical, stage, deadline) if dense and short else {}
        ranked = fusion.fuse(
            [(h.id, h.score) for h in lexical], [(c.id, cos) for c, cos in dense], stage, limit, asking, cosines
        )
        dense_rows = {cand.id: (cand, cos) for cand, cos in dense}
        self.last_path = f"fused:{stage}" if dense else stage
        hits = []
        for entry in ranked:
            lexical_hit = by_key.get(entry.key)
            if lexical_hit is not None and entry.by_meaning:
                # its score is its calibrated cosine: thresholds treat it as the similarity it is
                kind = {"raw_score": entry.cosine, "raw_score_kind": SCORE_KIND}
                hits.append(lexical_hit.copy(score=entry.score, relevance=entry.score, **kind))
                continue
            if lexical_hit is not None:
                hits.append(lexical_hit.copy(score=entry.score, relevance=entry.score))
                continue
            cand, cosine = dense_rows[entry.key]
            cand.score = entry.score
            hit = cand.to_hit(self._name).copy(raw_score=cosine, raw_score_kind=SCORE_KIND)
            hits.append(apply_hit_attribution(hit))
        return hits

    def _lexical_cosines(self, text: str, lexical: list[MemoryHit], stage: str, deadline: Deadline) -> dict[str, float]:
        """The cosine of the partial lexical matches (a relaxed stage) that have a vector, by id."""
        if stage in fusion.LEADING_STAGES or not lexical:
            return {}
        import numpy as np

        vector = self._query_vector(text, deadline)  # embedded by the dense part: cached
        ids = [hit.id for hit in lexical]
        with self._db.session("search", deadline) as conn:
            rows = conn.execute(
                f"""SELECT m.id, v.vec FROM memories AS m JOIN hybrid_vectors AS v
                    ON v.memory_rowid = m.rowid AND v.model = ? WHERE m.id IN ({",".join("?" * len(ids))})""",
                (MODEL_ID, *ids),
            ).fetchall()
        return {
            str(ident): float(np.frombuffer(blob, dtype=np.float32) @ vector)
            for ident, blob in rows
            if len(blob) == DIM * 4
        }

    def _query_vector(self, text: str, deadline: Deadline) -> npt.NDArray[np.float32]:
        with self._query_lock:
            cached = self._query_vectors.get(text)
            if cached is not None:
                self._query_vectors.move_to_end(text)
                return cached
        model = self._search_model(deadline)
        # Inference is not interruptible: start it only if it should end before the deadline.
        left = deadline.remaining() - _SEARCH_RESERVE
        if left < self._embed_cost:
            raise _SemanticSkipped("deadline")
        started = time.perf_counter()
        try:
            vector: npt.NDArray[np.float32] = model.embed(
                [text], wait=left - self._embed_cost if math.isfinite(left) else None
            )[0]
        except ModelBusy as exc:
            raise _SemanticSkipped("model-busy") from exc
        spent = time.perf_counter() - started
        self._embed_cost = 0.8 * self._embed_cost + 0.2 * spent
        with self._query_lock:
            self._query_vectors[text] = vector
            while len(self._query_vectors) > _QUERY_CACHE:
                self._query_vectors.popitem(last=False)
        return vector

    def _search_model(self, deadline: Deadline) -> Embedder:
        """The model, waiting for the warm-up thread's load only as long as ``deadline`` allows."""
        model = self._embedder or loaded_embedder()
        if model is not None:
            return model
        if self._warmer is not None and not self._model_ready.is_set():
            left = deadline.remaining() - _SEARCH_RESERVE - self._embed_cost
            if left <= 0 or not self._model_ready.wait(None if math.isinf(left) else left):
                raise _SemanticSkipped("model-loading")
        return self._model()  # no warm-up (a short-lived command): load it here

    @staticmethod
    def _admitted(
        conn: sqlite3.Connection,
        nearest: list[tuple[int, float]],
        where: str,
        args: Sequence[object],
        limit: int,
        vector: npt.NDArray[np.float32],
    ) -> dict[int, float]:
        """The exact cosine of each candidate that passes the SQL filters and may be among the
        ``limit`` most similar, by rowid.

        ``nearest`` is ordered by estimated cosine.  Once ``limit`` candidates passed, a
        candidate whose estimate is more than :data:`~.vectors.RESCORE_WINDOW` under the
        ``limit``-th one's cannot overtake it when both are re-scored: the filters run a page
        at a time until that floor is known, then on the rest of the window.  Each statement
        reads the passing rows' stored float32 vectors too.  At most twice ``limit`` or
        :data:`_RESCORED` candidates, whichever is more, are re-scored: in a cluster of near-copies (more of them
        within the window) the ones left out are as close as the estimate can tell apart.
        """
        most = max(2 * limit, _RESCORED)
        chosen: list[tuple[int, float, bytes]] = []
        floor = -math.inf
        start = 0
        while start < len(nearest) and nearest[start][1] >= floor and len(chosen) < most:
            end = min(start + _FILTER_PAGE, len(nearest))
            if floor > -math.inf:  # the rest of the window, as far as the re-scored ones go
                end = next((i for i in range(start, len(nearest)) if nearest[i][1] < floor), len(nearest))
                end = min(end, start + most - len(chosen))
            page, start = nearest[start:end], end
            passed = dict(
                conn.execute(
                    f"""SELECT m.rowid, v.vec FROM memories AS m JOIN hybrid_vectors AS v
                        ON v.memory_rowid = m.rowid AND v.model = ?
                        WHERE m.rowid IN ({",".join("?" * len(page))}) AND {where}""",
                    (MODEL_ID, *(rowid for rowid, _ in page), *args),
                )
            )
            # a vector replaced by another width since the cache's sync is not comparable
            chosen.extend(
                (rowid, estimate, passed[rowid])
                for rowid, estimate in page
                if len(passed.get(rowid, b"")) == vector.nbytes
            )
            if len(chosen) >= limit:
                floor = chosen[limit - 1][1] - RESCORE_WINDOW
        kept = [(rowid, blob) for rowid, estimate, blob in chosen[:most] if estimate >= floor]
        return dict(zip((rowid for rowid, _ in kept), cosines(vector, [blob for _, blob in kept]), strict=True))

    def _dense(self, query: SearchQuery, deadline: Deadline, pool: int) -> list[tuple[Candidate, float]]:
        """Up to ``pool`` memories by cosine at or above the cut-off that pass the query's filters."""
        request = Request.of(query)
        vector = self._query_vector(query.text, deadline)
        with self._db.session("search", deadline) as conn:
            self._ensure(conn)
            self._cache.sync(conn)
            nearest = self._cache.top(vector, calibration.CUTOFF, max(pool, _VECTOR_CANDIDATES))
            if not nearest:
                return []
            where, args = filter_clause(request)
            # The cache's cosines are 4-bit estimates: the admitted candidates that may be
            # among the pool's are re-scored from their stored vectors.
            exact = self._admitted(conn, nearest, where, args, pool, vector)
            cosine = {rowid: cos for rowid, cos in exact.items() if cos >= calibration.CUTOFF}
            chosen = sorted(cosine, key=lambda rowid: cosine[rowid], reverse=True)[:pool]
            if not chosen:
                return []
            marks = ",".join("?" * len(chosen))
            rows = conn.execute(
                f"SELECT {ROW_COLUMNS} FROM memories AS m WHERE m.rowid IN ({marks})", chosen
            ).fetchall()
        found = [Candidate.from_row(row) for row in rows]
        found.sort(key=lambda c: c.created_at, reverse=True)
        found.sort(key=lambda c: cosine[c.rowid], reverse=True)
        return [(cand, cosine[cand.rowid]) for cand in found]


class _SemanticSkipped(Exception):
    """The semantic part of a search could not run in time; its message is the reason."""


def _lexical_only(hit: MemoryHit, reason: str) -> MemoryHit:
    """``hit`` marked as answered without the semantic part (``reason``: why it was skipped)."""
    return hit.copy(raw_score_kind=f"{LEXICAL_ONLY_KIND}:{reason}")
