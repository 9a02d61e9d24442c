"""The in-memory 4-bit vector cache: bounded estimates, exact re-scoring, staying correct whoever writes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from paxm_core import Deadline, MemoryItem, ProviderConfig
from paxm_provider_sqlite_hybrid import calibration, vectors
from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider
from paxm_provider_sqlite_hybrid.vectors import ESTIMATE_ERROR, VectorCache, ensure_schema, exact_cosines, store_vectors

DIM = 384
MODEL = "test-model"


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE IF NOT EXISTS memories (id TEXT PRIMARY KEY, text TEXT)")
    ensure_schema(conn)
    return conn


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[sqlite3.Connection, sqlite3.Connection]]:
    """Two connections to one file: the cache's, and "another process"."""
    mine, other = connect(tmp_path / "v.sqlite"), connect(tmp_path / "v.sqlite")
    yield mine, other
    mine.close()
    other.close()


def put(conn: sqlite3.Connection, rows: dict[int, np.ndarray]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    for rowid in rows:
        conn.execute("INSERT OR IGNORE INTO memories(rowid, id, text) VALUES (?, ?, '')", (rowid, f"m{rowid}"))
    store_vectors(conn, MODEL, [(r, v.astype(np.float32).tobytes()) for r, v in rows.items()])
    conn.execute("COMMIT")


def best(cache: VectorCache, conn: sqlite3.Connection, query: np.ndarray) -> tuple[int, float]:
    cache.sync(conn)
    return cache.top(query, -1.0, 1)[0]


def test_4bit_estimates_stay_within_the_allowed_error_and_rescoring_is_exact(
    store: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    mine, _ = store
    rng = np.random.default_rng(1)
    vecs = unit(rng, 3000)
    put(mine, {i + 1: v for i, v in enumerate(vecs)})
    cache = VectorCache(MODEL, DIM)
    cache.sync(mine)
    assert cache.size == 3000
    query = unit(rng, 1)[0]
    exact = vecs @ query
    got = cache.top(query, -1.0, 3000)
    approx = np.array([s for _, s in sorted(got)])
    assert np.max(np.abs(approx - exact)) < ESTIMATE_ERROR
    assert np.std(approx - exact) < 0.01
    # near-ties (random vectors: the best five are within a few hundredths) may swap places,
    # but stay among the first candidates, where re-scoring puts them back in order
    best_five = [int(i) + 1 for i in np.argsort(-exact)[:5]]
    assert set(best_five) <= {r for r, _ in got[:20]}
    # 4-bit rows and 48 sign-bit bytes, not int8 (384 bytes) or float32 rows
    assert cache.nbytes() < 3000 * (DIM // 2 + DIM // 8 + 12) * 1.05
    rescored = exact_cosines(mine, MODEL, query, [r for r, _ in got[:50]] + [99_999])
    assert sorted(rescored) == sorted(r for r, _ in got[:50])  # a rowid without a vector is left out
    assert all(abs(rescored[r] - exact[r - 1]) < 1e-6 for r in rescored)
    assert sorted(rescored, key=lambda r: rescored[r], reverse=True)[:5] == best_five


def test_cutoff_and_limit(store: tuple[sqlite3.Connection, sqlite3.Connection]) -> None:
    mine, _ = store
    rng = np.random.default_rng(2)
    base = unit(rng, 1)[0]
    near = base + rng.normal(0, 0.01, DIM).astype(np.float32)
    put(mine, {1: base, 2: near / np.linalg.norm(near), 3: -base})
    cache = VectorCache(MODEL, DIM)
    cache.sync(mine)
    hits = cache.top(base, 0.5, 10)
    assert [r for r, _ in hits] == [1, 2] and hits[0][1] == pytest.approx(1.0, abs=ESTIMATE_ERROR)
    assert [r for r, _ in cache.top(base, 0.5, 1)] == [1]


def test_writes_and_deletes_from_another_connection_are_applied(
    store: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    mine, other = store
    rng = np.random.default_rng(3)
    a, b, c = unit(rng, 3)
    put(mine, {1: a, 2: b})
    cache = VectorCache(MODEL, DIM)
    assert best(cache, mine, a)[0] == 1
    loaded_at = cache.seq
    put(other, {3: c})  # a new memory
    assert best(cache, mine, c)[0] == 3 and cache.size == 3
    put(other, {1: c})  # an upsert re-embedded memory 1 from a new text
    assert cache.size == 3
    assert best(cache, mine, a)[1] < 0.5
    other.execute("DELETE FROM memories WHERE rowid = 3")  # forget: the trigger drops the vector
    cache.sync(mine)
    assert sorted(cache.rowids.tolist()) == [1, 2]
    assert cache.seq is not None and loaded_at is not None and cache.seq > loaded_at


def test_own_connection_changes_are_applied_too(store: tuple[sqlite3.Connection, sqlite3.Connection]) -> None:
    mine, _ = store
    rng = np.random.default_rng(4)
    vecs = unit(rng, 50)
    put(mine, {i + 1: v for i, v in enumerate(vecs)})
    cache = VectorCache(MODEL, DIM)
    cache.sync(mine)
    mine.execute("DELETE FROM memories WHERE rowid IN (1, 25, 50)")
    put(mine, {51: vecs[0]})
    cache.sync(mine)
    assert sorted(cache.rowids.tolist()) == [*range(2, 25), *range(26, 50), 51]
    assert best(cache, mine, vecs[0])[0] == 51
    assert best(cache, mine, vecs[30])[0] == 31  # a row moved into a hole still answers


def test_a_cache_behind_a_pruned_log_reloads(
    store: tuple[sqlite3.Connection, sqlite3.Connection], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, other = store
    rng = np.random.default_rng(5)
    vecs = unit(rng, 4)
    put(mine, {1: vecs[0]})
    cache = VectorCache(MODEL, DIM)
    cache.sync(mine)
    monkeypatch.setattr(vectors, "LOG_KEEP", 1)
    for i in range(2, 5):  # the log keeps only its newest entry: the cache cannot replay
        put(other, {i: vecs[i - 1]})
    other.execute("DELETE FROM memories WHERE rowid = 1")
    other.execute("DELETE FROM hybrid_changes WHERE seq < (SELECT max(seq) FROM hybrid_changes)")
    cache.sync(mine)
    assert sorted(cache.rowids.tolist()) == [2, 3, 4]


def test_vectors_of_another_dimension_are_ignored(store: tuple[sqlite3.Connection, sqlite3.Connection]) -> None:
    mine, _ = store
    rng = np.random.default_rng(6)
    put(mine, {1: unit(rng, 1)[0]})
    mine.execute("INSERT INTO memories(rowid, id, text) VALUES (2, 'm2', '')")
    store_vectors(mine, MODEL, [(2, np.zeros(16, dtype=np.float32).tobytes())])
    cache = VectorCache(MODEL, DIM)
    cache.sync(mine)
    assert cache.rowids.tolist() == [1]


def test_provider_cache_follows_cleanup_and_other_writers(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    first = HybridSQLiteProvider("a", ProviderConfig(path=str(db)))
    second = HybridSQLiteProvider("b", ProviderConfig(path=str(db)))
    try:
        first.put(MemoryItem(text="Timestamps are stored in UTC.", id="tz", tier="ltm"), Deadline.none())
        first.vector_status(Deadline.none())
        with first._db.session("test", Deadline.none()) as conn:
            first._cache.sync(conn)
        assert first._cache.size == 1
        second.put(MemoryItem(text="Deploys go through CI.", id="ci", tier="ltm"), Deadline.none())
        with sqlite3.connect(db) as raw:
            raw.execute("DELETE FROM memories WHERE id = 'tz'")
        with first._db.session("test", Deadline.none()) as conn:
            first._cache.sync(conn)
        assert first._cache.size == 1
        (rowid,) = first._cache.rowids.tolist()
        with sqlite3.connect(db) as raw:
            assert raw.execute("SELECT id FROM memories WHERE rowid = ?", (rowid,)).fetchone() == ("ci",)
    finally:
        first.close()
        second.close()


def test_vectors_preload_in_the_background_even_for_a_store_without_the_log(tmp_path: Path) -> None:
    import os
    import stat
    import time

    db = tmp_path / "memory.sqlite"
    first = HybridSQLiteProvider("a", ProviderConfig(path=str(db)))
    first.put_batch(
        [MemoryItem(text=f"note {i} about the deploy pipeline", id=f"n{i}", tier="ltm") for i in range(5)],
        Deadline.none(),
    )
    first.close()
    conn = sqlite3.connect(db, isolation_level=None)  # as the first release wrote it: no change log
    conn.execute("DROP TRIGGER hybrid_vectors_logged_put")
    conn.execute("DROP TRIGGER hybrid_vectors_logged_delete")
    conn.execute("DROP TABLE hybrid_changes")
    conn.close()
    for sibling in ("-wal", "-shm"):
        Path(f"{db}{sibling}").unlink(missing_ok=True)
    old = os.umask(0o022)
    try:
        second = HybridSQLiteProvider("b", ProviderConfig(path=str(db)))
        try:
            stop = time.monotonic() + 120
            while second._cache.seq is None and time.monotonic() < stop:
                time.sleep(0.1)
            assert second._cache.size == 5  # loaded with no search having run
            for sibling in ("", "-wal", "-shm"):
                target = Path(f"{db}{sibling}")
                if target.exists():
                    assert stat.S_IMODE(target.stat().st_mode) == 0o600, sibling
            second.put(MemoryItem(text="a sixth note", id="n5", tier="ltm"), Deadline.none())
            with second._db.session("test", Deadline.none()) as conn:
                second._cache.sync(conn)
            assert second._cache.size == 6  # the log was created, so later writes are applied
        finally:
            second.close()
    finally:
        os.umask(old)


def clustered(rng: np.random.Generator, n: int, clusters: int) -> np.ndarray:
    """Unit vectors shaped like sentence embeddings: a shared direction (every MiniLM vector
    leans the same way), topic clusters, and spread within each topic."""
    shared = rng.normal(size=DIM).astype(np.float32)
    shared *= 0.6 / np.linalg.norm(shared)
    centres = unit(rng, clusters) + shared
    members = centres[rng.integers(0, clusters, n)] + rng.normal(0, 0.035, (n, DIM)).astype(np.float32)
    out: np.ndarray = (members / np.linalg.norm(members, axis=1, keepdims=True)).astype(np.float32)
    return out


def _rescored_top(
    cache: VectorCache, conn: sqlite3.Connection, query: np.ndarray, cutoff: float, k: int, *, exact: bool = False
) -> list[tuple[int, float]]:
    """The provider's path: candidates by estimate, those within the window of the k-th
    estimate re-scored exactly, cut-off applied."""
    candidates = cache.top(query, cutoff, 256, exact=exact)
    floor = candidates[k - 1][1] - vectors.RESCORE_WINDOW if len(candidates) >= k else -1.0
    rescored = [r for r, estimate in candidates if estimate >= floor]
    cosines = {r: c for r, c in exact_cosines(conn, MODEL, query, rescored).items() if c >= cutoff}
    return sorted(cosines.items(), key=lambda rc: rc[1], reverse=True)[:k]


def test_sign_bit_prefilter_and_rescoring_keep_the_exact_top_k(
    store: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    mine, other = store
    rng = np.random.default_rng(7)
    n = 30_000
    assert n >= 4 * vectors.PREFILTER_CANDIDATES and n >= vectors.PREFILTER_FROM
    vecs = clustered(rng, n, 1500)
    put(mine, {i + 1: v for i, v in enumerate(vecs)})
    cache = VectorCache(MODEL, DIM)
    cache.sync(mine)
    assert cache.prefiltered
    # Paraphrase-like queries (cosine ~0.55-0.9 to their memory, as on the paraphrase suite)
    # must find the exact top ten of the float vectors; unrelated queries must agree above the
    # calibrated cut-off, the only hits the provider can return.
    targets = vecs[rng.integers(0, n, 150)]
    near = targets + np.repeat([0.5, 1.0, 1.5], 50)[:, None] * unit(rng, 150)
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    for queries, cutoff in ((near, -1.0), (unit(rng, 50), calibration.CUTOFF)):
        found = expected = same_first = 0
        for query in queries:
            sims = vecs @ query
            best_ten = [int(i) + 1 for i in np.argsort(-sims)[:10] if sims[i] >= cutoff]
            fast = _rescored_top(cache, mine, query, cutoff, 10)
            found += len(set(best_ten) & {r for r, _ in fast})
            expected += len(best_ten)
            same_first += best_ten[:1] == [r for r, _ in fast[:1]]
            # every similarity returned is the exact one
            assert all(abs(sims[r - 1] - s) < 1e-6 for r, s in fast)
        assert found >= 0.99 * expected
        assert same_first >= 0.99 * len(queries)
    # Writes from another connection keep the sketches in step: replaced, removed, added rows.
    fresh = unit(rng, 3)
    other.execute("BEGIN IMMEDIATE")
    other.execute("DELETE FROM memories WHERE rowid IN (1, 2)")
    other.execute("INSERT INTO memories(rowid, id, text) VALUES (?, ?, '')", (n + 1, f"m{n + 1}"))
    store_vectors(other, MODEL, [(n + 1, fresh[0].tobytes()), (3, fresh[1].tobytes())])
    other.execute("COMMIT")
    cache.sync(mine)
    assert cache.size == n - 1
    assert cache.top(fresh[0], 0.9, 5)[0][0] == n + 1
    assert cache.top(fresh[1], 0.9, 5)[0][0] == 3
    assert all(r not in (1, 2) for r, _ in cache.top(vecs[0], -1.0, 50))


def test_small_caches_estimate_every_row(store: tuple[sqlite3.Connection, sqlite3.Connection]) -> None:
    mine, _ = store
    rng = np.random.default_rng(8)
    vecs = clustered(rng, 2000, 100)
    put(mine, {i + 1: v for i, v in enumerate(vecs)})
    cache = VectorCache(MODEL, DIM)
    cache.sync(mine)
    assert not cache.prefiltered
    for query in unit(rng, 20):
        assert cache.top(query, -1.0, 10) == cache.top(query, -1.0, 10, exact=True)
        sims = vecs @ query
        assert [r for r, _ in _rescored_top(cache, mine, query, -1.0, 10)] == [
            int(i) + 1 for i in np.argsort(-sims)[:10]
        ]


def test_a_cache_growing_past_the_threshold_keeps_its_sketches_current(
    store: tuple[sqlite3.Connection, sqlite3.Connection], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "PREFILTER_FROM", 500)
    monkeypatch.setattr(vectors, "PREFILTER_CANDIDATES", 40)  # keep 40 of 600+: the sketch decides
    mine, other = store
    rng = np.random.default_rng(9)
    vecs = unit(rng, 1200)
    put(mine, {i + 1: v for i, v in enumerate(vecs[:400])})
    cache = VectorCache(MODEL, DIM)
    cache.sync(mine)
    assert not cache.prefiltered
    put(other, {i + 1: v for i, v in enumerate(vecs[:700]) if i >= 400})  # past the threshold
    assert best(cache, mine, vecs[650])[0] == 651
    assert cache.prefiltered
    put(other, {i + 1: v for i, v in enumerate(vecs) if i >= 700})  # grows the capacity
    replaced = unit(rng, 1)[0]
    put(other, {5: replaced})
    other.execute("DELETE FROM memories WHERE rowid IN (10, 1200)")
    cache.sync(mine)
    assert cache.size == 1198
    for rowid in (1, 399, 400, 699, 701, 1199):
        assert best(cache, mine, vecs[rowid - 1])[0] == rowid
    assert best(cache, mine, replaced)[0] == 5
    assert all(r not in (10, 1200) for r, _ in cache.top(vecs[9], -1.0, 5))
    assert cache.top(vecs[1199], 0.9, 5) == []  # deleted: its sketch went with it


class _FixedEmbedder:
    """Vectors chosen by the test: each text's own, the query's for any other text."""

    def __init__(self, vectors: dict[str, np.ndarray], query: np.ndarray) -> None:
        self.vectors, self.query = vectors, query

    def embed(self, texts: list[str], deadline: object = None, *, wait: object = None) -> np.ndarray:
        return np.stack([self.vectors.get(t, self.query) for t in texts]).astype(np.float32)


def test_the_provider_ranks_a_dense_cluster_by_its_exact_cosines(tmp_path: Path) -> None:
    from paxm_core import SearchQuery

    rng = np.random.default_rng(10)
    query = unit(rng, 1)[0]
    # 50 memories whose cosines to the query are 0.0004 apart: far closer than a 4-bit
    # estimate's error (sd ~0.007), so the estimates shuffle them; 250 more well under them
    cosines = np.concatenate([0.5 + 0.0004 * rng.permutation(50), 0.3 + 0.0004 * rng.permutation(250)])
    others = unit(rng, 300)
    others -= (others @ query)[:, None] * query
    others /= np.linalg.norm(others, axis=1, keepdims=True)
    vecs = cosines[:, None] * query + np.sqrt(1 - cosines**2)[:, None] * others
    texts = {f"cluster memory {i}": v.astype(np.float32) for i, v in enumerate(vecs)}
    fake = _FixedEmbedder(texts, query)
    prov = HybridSQLiteProvider("h", ProviderConfig(path=str(tmp_path / "m.sqlite")), embedder=fake, warm=False)  # type: ignore[arg-type]
    try:
        prov.put_batch([MemoryItem(text=t, id=f"c{i}", tier="ltm") for i, t in enumerate(texts)], Deadline.none())
        got = prov._dense(SearchQuery("anything at all", limit=20), Deadline.none(), 20)
        expected = [f"c{int(i)}" for i in np.argsort(-cosines)[:20]]
        assert [cand.id for cand, _ in got] == expected
        assert all(abs(cos - cosines[int(cand.id[1:])]) < 1e-5 for cand, cos in got)
    finally:
        prov.close()
