"""Retrieval quality by category, with fixtures written for this project (not the eval suites)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from paxm_core import Deadline, MemoryItem, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.analyzer import analyze_query, index_text
from paxm_provider_sqlite.retrieval.morphology import canonical

NO_LIMIT = Deadline.none()


def seed(provider: SQLiteProvider, memories: dict[str, str], **meta: dict[str, str]) -> None:
    provider.put_batch(
        [MemoryItem(text=text, id=mid, metadata=meta.get(mid, {})) for mid, text in memories.items()], NO_LIMIT
    )


def recall(provider: SQLiteProvider, query: str, limit: int = 3, **metadata: str) -> list[str]:
    return [h.id for h in provider.search(SearchQuery(query, limit=limit, metadata=metadata), NO_LIMIT)]


# --- morphology -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "target"),
    [
        ("deploying the gateway", "Gateway deployment happens every Friday."),
        ("upload retried", "Upload retries use exponential backoff."),
        ("validate tokens", "Token validation lives in the middleware."),
        ("normalized paths", "Path normalization strips trailing slashes."),
        ("cached builds", "Build caching is disabled on CI runners."),
        ("connection pooling", "Pooled connections are capped at twenty."),
        ("notify subscribers", "Subscriber notifications go out hourly."),
        ("register webhooks", "Webhook registration needs an admin token."),
        ("describe the schema", "The schema description is in schema.md."),
        ("rotating secrets", "Secret rotation happens monthly."),
        ("migrating the billing schema", "The billing schema migration runs before each release."),
        ("schema migrations", "We are migrating the schema table by table."),
        ("operations runbook", "Operating the cluster follows the runbook in ops/."),
        ("deployments freeze", "Deploying is frozen during the December freeze."),
    ],
)
def test_morphology_matches_inflections_and_derivations(provider: SQLiteProvider, query: str, target: str) -> None:
    seed(provider, {"target": target, "noise": "An unrelated note about lunch plans and coffee."})
    assert recall(provider, query, limit=1) == ["target"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("general", "generous"),
        ("university", "universe"),
        ("news", "newest"),
        ("formation", "format"),
        ("station", "state"),
        ("nation", "native"),
        ("importance", "import"),
    ],
)
def test_morphology_is_conservative(a: str, b: str) -> None:
    assert canonical(a) != canonical(b)


@pytest.mark.parametrize(
    "forms",
    [
        ("migrate", "migrated", "migrating", "migration", "migrations"),
        ("deploy", "deployed", "deploying", "deployment", "deployments"),
        ("operate", "operating", "operation"),
        ("automate", "automating", "automation"),
        ("paginate", "paginating", "pagination"),
    ],
)
def test_derivational_forms_share_one_key(forms: tuple[str, ...]) -> None:
    assert len({canonical(f) for f in forms}) == 1, {f: canonical(f) for f in forms}


# --- bounded aliases ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "target", "near"),
    [
        ("db migration", "The database migration runs before deploy.", "The migration of office furniture."),
        ("k8s namespace", "Each kubernetes namespace gets a quota.", "Namespace collisions in Python imports."),
        ("repository mirror", "The repo mirror syncs hourly.", "The mirror in the hallway is cracked."),
        ("env variables", "Environment variables override the config file.", "Shell variables are untyped."),
    ],
)
def test_bounded_alias_both_ways(provider: SQLiteProvider, query: str, target: str, near: str) -> None:
    seed(provider, {"target": target, "near": near})
    assert recall(provider, query) == ["target"]


# --- CJK substrings -------------------------------------------------------------------------


def test_cjk_substring_prefers_contiguous(provider: SQLiteProvider) -> None:
    seed(
        provider,
        {
            "target": "默认使用本地数据库存储所有记忆",
            "split": "数据同步与库存盘点没有关系",
            "other": "发布流程需要人工审核",
        },
    )
    assert recall(provider, "数据库存储", limit=1) == ["target"]
    assert "other" not in recall(provider, "数据库存储", limit=5)


def test_cjk_inside_mixed_text(provider: SQLiteProvider) -> None:
    seed(provider, {"t": "Use 缓存策略 for the API layer", "n": "Use the API layer directly"})
    assert recall(provider, "缓存", limit=1) == ["t"]


def test_japanese_and_korean_runs(provider: SQLiteProvider) -> None:
    seed(provider, {"ja": "テスト環境のデータベース", "ko": "배포 환경은 서울 리전입니다", "n": "nothing here"})
    assert recall(provider, "データベース", limit=1) == ["ja"]
    assert recall(provider, "서울 리전", limit=1) == ["ko"]


# --- identifiers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "target", "near"),
    [
        ("max retry budget", "maxRetryBudget defaults to five.", "maxRetryDelay defaults to ten."),
        ("maxRetryBudget", "The max retry budget is five.", "The max retry delay is ten."),
        ("upload_chunk_size", "uploadChunkSize is 8 MiB.", "uploadChunkCount is 4."),
        ("uploadchunksize", "upload_chunk_size is 8 MiB.", "upload_chunk_count is 4."),
        ("feature-flag-store", "featureFlagStore keeps flags in redis.", "featureToggleStore is legacy."),
        ("HTTPServer timeout", "http server timeout is 30s", "tcp server timeout is 10s"),
        ("cmd/worker/main.go", "Entry point: cmd/worker/main.go starts the queue.", "cmd/api/main.go starts HTTP."),
        ("worker main go", "Entry point: cmd/worker/main.go starts the queue.", "cmd/api/main.go starts HTTP."),
    ],
)
def test_identifier_split_both_ways(provider: SQLiteProvider, query: str, target: str, near: str) -> None:
    seed(provider, {"target": target, "near": near})
    assert recall(provider, query, limit=1) == ["target"]


@pytest.mark.parametrize(
    "near", ["Shipped v2.3.10 yesterday.", "Shipped v2.1.3 yesterday.", "Shipped v3.2.1 yesterday."]
)
def test_versions_match_exactly(provider: SQLiteProvider, near: str) -> None:
    seed(provider, {"target": "Shipped v2.3.1 yesterday.", "near": near})
    assert recall(provider, "v2.3.1", limit=5) == ["target"]
    assert recall(provider, "2.3.1", limit=5) == ["target"]


def test_error_codes(provider: SQLiteProvider) -> None:
    seed(provider, {"target": "rustc E0425 means an unresolved name.", "near": "rustc E0433 means a failed path."})
    assert recall(provider, "E0425", limit=5) == ["target"]
    seed(provider, {"s": "Got ERR_CONN_RESET from the proxy", "n": "Got ERR_CONN_REFUSED from the proxy"})
    assert recall(provider, "err conn reset", limit=1) == ["s"]


# --- stages ---------------------------------------------------------------------------------


def test_strict_suppresses_relaxed(provider: SQLiteProvider) -> None:
    seed(
        provider,
        {
            "target": "Agreed: nightly vacuum compaction job.",
            "a": "Something about nightly builds.",
            "b": "Compaction of the ledger.",
        },
    )
    assert recall(provider, "nightly compaction", limit=5) == ["target"]
    assert provider.last_trace is not None and provider.last_trace.selected == "strict"


def test_relaxed_fallback_ranks_by_coverage(provider: SQLiteProvider) -> None:
    seed(
        provider,
        {
            "three": "Notes on the ingest queue sharding.",
            "two": "Notes on the ingest queue.",
            "one": "Notes on the ingest path.",
            "zero": "Unrelated gardening notes.",
        },
    )
    hits = provider.search(SearchQuery("ingest queue sharding replicas", limit=5), NO_LIMIT)
    # "one" holds a word of the query in passing: under half the best hit's coverage
    assert [h.id for h in hits] == ["three", "two"]
    assert provider.last_trace is not None and provider.last_trace.selected == "relaxed"
    assert hits[0].relevance == pytest.approx(3 / 4) and hits[1].relevance == pytest.approx(2 / 4)


def test_exact_phrase_beats_scattered_terms(provider: SQLiteProvider) -> None:
    seed(
        provider,
        {
            "exact": "Decision: cache warmup on boot.",
            "scattered": "Long transcript: the cache was cold, a warmup script existed, and boot was slow.",
        },
    )
    assert recall(provider, "cache warmup on boot", limit=3) == ["exact"]
    assert provider.last_trace is not None and provider.last_trace.selected == "exact"


def test_exact_and_strict_have_full_relevance(provider: SQLiteProvider) -> None:
    seed(provider, {"m": "Rotate the signing keys quarterly."})
    (hit,) = provider.search(SearchQuery("signing keys"), NO_LIMIT)
    assert hit.relevance == 1.0 and hit.score == 1.0
    assert hit.raw_score is not None and hit.raw_score > 0


def test_denser_memory_ranks_first(provider: SQLiteProvider) -> None:
    seed(
        provider,
        {
            "short": "Staging uses port 8443.",
            "long": "Staging notes: many unrelated details about staging people, lunch, chairs, and uses port 8443.",
        },
    )
    assert recall(provider, "staging port 8443", limit=2)[0] == "short"


# --- long prompts ---------------------------------------------------------------------------

_FILLER = (
    "so I was thinking about how we should approach this change and whether it makes sense to do it now or "
    "later because there are a lot of moving parts and I want to be careful with the rollout and the tests "
)


def test_long_noisy_prompt_finds_distinctive_memory(provider: SQLiteProvider) -> None:
    # A corpus where the prompt's filler words are common, as they are in real memories.
    words = _FILLER.split()
    background = {f"bg{i}": " ".join(words[(i * 7 + k * 3) % len(words)] for k in range(12)) for i in range(300)}
    seed(
        provider,
        {
            **background,
            "target": "The flaky test is test_checkout_idempotency; it needs a frozen clock.",
            "noise1": "We should be careful with the rollout.",
            "noise2": "There are a lot of moving parts in the tests.",
        },
    )
    prompt = (_FILLER * 6) + "anyway test_checkout_idempotency failed again " + (_FILLER * 6)
    assert len(prompt.split()) > 250
    hits = provider.search(SearchQuery(prompt, limit=3), NO_LIMIT)
    assert hits and hits[0].id == "target"
    assert all(0.0 <= h.relevance <= 1.0 for h in hits)


def test_long_prompt_query_is_bounded() -> None:
    query = analyze_query(" ".join(f"word{i}" for i in range(2000)))
    assert len(query.groups) == 2000  # analysis keeps them; the plan bounds what it queries


# --- workspace isolation --------------------------------------------------------------------


def test_workspace_isolation(provider: SQLiteProvider) -> None:
    seed(
        provider,
        {"a": "lint runs ruff", "b": "lint runs eslint", "shared": "lint runs in CI"},
        a={"workspace": "/repo/a"},
        b={"workspace": "/repo/b"},
    )
    assert sorted(recall(provider, "lint runs", limit=10, workspace="/repo/a")) == ["a", "shared"]
    assert sorted(recall(provider, "eslint", limit=10, workspace="/repo/a")) == []
    assert sorted(recall(provider, "lint runs", limit=10, workspace="/repo/b")) == ["b", "shared"]


def test_workspace_isolation_on_every_path(provider: SQLiteProvider) -> None:
    seed(provider, {"x": "alpha beta gamma"}, x={"workspace": "/other"})
    for query in ("alpha", "alpha beta gamma", "alpha zeta", "...", "alpha " + _FILLER * 5):
        assert recall(provider, query, limit=10, workspace="/mine") == [], query


def test_expired_hidden_on_every_path(provider: SQLiteProvider) -> None:
    past = datetime.now(UTC) - timedelta(minutes=1)
    provider.put(MemoryItem(text="alpha beta gamma", id="gone", tier="stm", expires_at=past), NO_LIMIT)
    for query in ("alpha", "alpha beta gamma", "alpha zeta", "...", "alpha " + _FILLER * 5):
        assert recall(provider, query, limit=10) == [], query


# --- bounded plan: no full-table scans ------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "benchmarker000050",
        "adapter memory benchmarker000050",
        "benchmarker000050 absent words",
        "absent analyzer terms",
        "数据库",
        "!!!",
        " ".join(_FILLER.split() * 3),
    ],
)
def test_no_full_table_scan(provider: SQLiteProvider, assert_no_full_scan: Callable[..., None], query: str) -> None:
    seed(provider, {f"m{i}": f"benchmark adapter memory benchmarker{i:06d} 数据库 padding" for i in range(200)})
    assert_no_full_scan(
        provider,
        lambda: provider.search(SearchQuery(query, limit=5, metadata={"workspace": "/w"}), NO_LIMIT),
        lambda s: s.lstrip().upper().startswith("SELECT"),
    )


# --- analyzer -------------------------------------------------------------------------------


def test_index_text_forms() -> None:
    indexed = index_text("Set maxRetryBudget in src/app/config.yaml for v1.4.2")
    terms = indexed.terms.split()
    assert {"max", "retry", "budget", "src", "yaml"} <= set(terms)
    assert canonical("config") in terms and canonical("app") in terms
    assert "maxretrybudget" in indexed.extras.split()
    assert "1_4_2" in indexed.extras.split()


def test_query_drops_stopwords_unless_nothing_else() -> None:
    assert [g.surface for g in analyze_query("what is the deploy region").groups] == ["deploy", "region"]
    assert [g.surface for g in analyze_query("what is it").groups] == ["what", "is", "it"]
    # identifier parts are never dropped, even when they are stopwords on their own
    assert "to" in [g.surface for g in analyze_query("sendToAll").groups]


def test_exact_phrase_found_among_common_terms(provider: SQLiteProvider) -> None:
    # Every query word is in > 256 memories (a "common" group), and the exact phrase sits in
    # the oldest row, behind 300 newer rows holding the same words in another order.
    old = datetime(2020, 1, 1, tzinfo=UTC)
    provider.put(MemoryItem(text="Decision: release channel stable.", id="exact", created_at=old), NO_LIMIT)
    provider.put_batch(
        [MemoryItem(text=f"stable builds; channel {i} gets the release later", id=f"n{i}") for i in range(300)],
        NO_LIMIT,
    )
    assert recall(provider, "release channel stable", limit=3) == ["exact"]
    assert provider.last_trace is not None and provider.last_trace.selected == "exact"


def test_tight_deadline_gives_result_or_deadline_error(provider: SQLiteProvider) -> None:
    from paxm_core import DeadlineExceeded

    words = _FILLER.split()
    provider.put_batch(
        [MemoryItem(text=" ".join(words[(i + k) % len(words)] for k in range(30)), id=f"m{i}") for i in range(600)],
        NO_LIMIT,
    )
    prompt = " ".join(f"{w}{i % 7}" for i, w in enumerate(words * 4))
    outcomes = set()
    for budget in (0.0, 0.0002, 0.002, 0.02, 5.0):
        try:
            provider.search(SearchQuery(prompt, limit=5), Deadline.after(budget))
            outcomes.add("ok")
        except DeadlineExceeded:
            outcomes.add("deadline")
    assert "deadline" in outcomes and "ok" in outcomes
    # and the provider is still healthy afterwards
    provider.health(NO_LIMIT)


def test_workspace_trailing_slash_is_the_same_workspace(provider: SQLiteProvider) -> None:
    seed(
        provider,
        {"slash": "format with black", "bare": "format with ruff", "other": "format with prettier"},
        slash={"workspace": "/repo/a/"},
        bare={"workspace": "/repo/a"},
        other={"workspace": "/repo/ab"},
    )
    for ws in ("/repo/a", "/repo/a/"):
        assert sorted(recall(provider, "format", limit=10, workspace=ws)) == ["bare", "slash"]
