"""Recall through the router: fan-out, errors, candidate pool, thresholds, ranking, dedupe (inventory §3)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from paxm_core import ConfigError, MemoryScope, Provenance, RecallError, SearchQuery
from paxm_core.router import Route, SearchPolicy, candidate_limit

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


def ids(result: Any) -> list[str]:
    return [f"{h.provider}/{h.id}" for h in result.hits]


def test_unknown_route_is_a_clear_error(fakes: Any, make_router: Any) -> None:
    router = make_router({"a": fakes.ScriptedProvider("a")})
    with pytest.raises(ConfigError, match="provider 'ghost' in search policy is not enabled.*enabled providers: a"):
        router.search(SearchQuery("x"), SearchPolicy([Route("ghost")]))


def test_no_providers_is_an_error(make_router: Any) -> None:
    with pytest.raises(ConfigError, match="no readable memory providers"):
        make_router({}).search(SearchQuery("x"), SearchPolicy())


def test_policy_without_routes_reads_every_provider(fakes: Any, make_router: Any) -> None:
    a = fakes.ScriptedProvider("a", [fakes.hit("a", "1", "alpha", 0.9)])
    b = fakes.ScriptedProvider("b", [fakes.hit("b", "2", "beta", 0.8)])
    result = make_router({"a": a, "b": b}).search(SearchQuery("q"), SearchPolicy())
    assert ids(result) == ["a/1", "b/2"]
    assert [r.provider for r in result.provider_recalls] == ["a", "b"]


def test_best_effort_failure_is_reported_and_healthy_hits_kept(fakes: Any, make_router: Any) -> None:
    good = fakes.ScriptedProvider("good", [fakes.hit("good", "1", "kept", 0.9)])
    bad = fakes.ScriptedProvider("bad", error=RuntimeError("connection refused"))
    router = make_router({"good": good, "bad": bad})
    result = router.search(SearchQuery("q"), SearchPolicy([Route("good", True), Route("bad", False)]))
    assert ids(result) == ["good/1"]
    assert [e.to_json() for e in result.provider_errors] == [
        {"provider": "bad", "required": False, "op": "search", "error": "connection refused"}
    ]
    outcomes = {r.provider: r.outcome for r in result.provider_recalls}
    assert outcomes == {"bad": "error", "good": "success"}


def test_required_failure_raises_with_partial_result(fakes: Any, make_router: Any) -> None:
    good = fakes.ScriptedProvider("good", [fakes.hit("good", "1", "partial hit", 0.9)])
    bad = fakes.ScriptedProvider("bad", error=fakes.ProviderError("bad", "search", "index corrupt"))
    router = make_router({"good": good, "bad": bad})
    with pytest.raises(RecallError, match="bad: index corrupt") as caught:
        router.search(SearchQuery("q"), SearchPolicy([Route("good"), Route("bad", required=True)]))
    partial = caught.value.result
    assert ids(partial) == ["good/1"]
    assert partial.provider_errors[0].required is True


def test_invalid_provider_return_is_an_error_not_a_crash(fakes: Any, make_router: Any) -> None:
    class Broken(fakes.ScriptedProvider):  # type: ignore[misc,name-defined]
        def search(self, query: Any, deadline: Any) -> Any:
            return {"not": "a list"}

    result = make_router({"x": Broken("x")}).search(SearchQuery("q"), SearchPolicy([Route("x")]))
    assert result.hits == [] and "not a list of MemoryHit" in result.provider_errors[0].error


@pytest.mark.parametrize(
    ("limit", "pool"), [(0, 0), (1, 3), (3, 9), (32, 96), (33, 100), (50, 100), (99, 100), (100, 100), (150, 150)]
)
def test_candidate_pool_rules(limit: int, pool: int) -> None:
    assert candidate_limit(limit) == pool


def test_provider_is_asked_for_the_pool_and_results_truncated(fakes: Any, make_router: Any) -> None:
    provider = fakes.ScriptedProvider("p", [fakes.hit("p", str(i), f"memory {i}", 0.9 - i / 100) for i in range(12)])
    router = make_router({"p": provider})
    result = router.search(SearchQuery("q", limit=7), SearchPolicy([Route("p")], limit=3))
    assert provider.queries[0].limit == 9  # policy limit wins over the query's
    assert ids(result) == ["p/0", "p/1", "p/2"]
    result = router.search(SearchQuery("q", limit=2), SearchPolicy([Route("p")]))
    assert provider.queries[1].limit == 6 and len(result.hits) == 2


def test_query_metadata_loses_forged_attribution_and_tiers_are_passed(fakes: Any, make_router: Any) -> None:
    provider = fakes.ScriptedProvider("p")
    router = make_router({"p": provider})
    query = SearchQuery("q", metadata={"workspace": "/w", "paxm_scope_id": "someone-else"}, filters={"k": "v"})
    router.search(query, SearchPolicy([Route("p")], tiers=("LTM", "ltm", "stm")))
    seen = provider.queries[0]
    assert seen.metadata == {"workspace": "/w"}
    assert seen.filters == {"k": "v"}
    assert seen.tiers == ("ltm", "stm")


def test_profile_thresholds_and_route_overrides(fakes: Any, make_router: Any) -> None:
    a = fakes.ScriptedProvider("a", [fakes.hit("a", "top", "best", 1.0), fakes.hit("a", "1", "thirty", 0.3)])
    b = fakes.ScriptedProvider("b", [fakes.hit("b", "top", "best too", 1.0), fakes.hit("b", "2", "thirty too", 0.3)])
    router = make_router({"a": a, "b": b})
    policy = SearchPolicy([Route("a"), Route("b", min_relevance=0.5)], min_relevance=0.25, min_score=0.25)
    assert sorted(ids(router.search(SearchQuery("q"), policy))) == ["a/1", "a/top", "b/top"]
    # a route's min_score override replaces the profile's for that provider only
    policy = SearchPolicy([Route("a", min_score=0.35), Route("b", min_score=0.1)], min_relevance=0.1, min_score=0.9)
    assert sorted(ids(router.search(SearchQuery("q"), policy))) == ["a/top", "b/2", "b/top"]


def test_thresholds_are_shares_of_the_best_hit(fakes: Any, make_router: Any) -> None:
    # A first hit under the absolute number is kept (upstream's cut dropped a decision ranked
    # first at 0.2475 under 0.25); the others are kept while within the share of the best.
    hits = [fakes.hit("p", "first", "the decision", 0.2475), fakes.hit("p", "near", "close behind", 0.2)]
    hits.append(fakes.hit("p", "far", "far behind", 0.05))
    router = make_router({"p": fakes.ScriptedProvider("p", hits)})
    policy = SearchPolicy([Route("p")], min_relevance=0.25, min_score=0.25)
    assert ids(router.search(SearchQuery("q", limit=10), policy)) == ["p/first", "p/near"]
    # a best hit at 1 makes the share the absolute number it always was
    hits = [fakes.hit("p", "top", "all words", 1.0), fakes.hit("p", "low", "one word", 0.2)]
    router = make_router({"p": fakes.ScriptedProvider("p", hits)})
    assert ids(router.search(SearchQuery("q", limit=10), policy)) == ["p/top"]


def test_relevance_falls_back_to_score_and_is_clamped(fakes: Any, make_router: Any) -> None:
    provider = fakes.ScriptedProvider(
        "p",
        [
            fakes.hit("p", "s", "score only", 0.0, score=0.6),
            fakes.hit("p", "hi", "too high", 1.7),
            fakes.hit("p", "neg", "negative", -0.3),
            fakes.hit("p", "nan", "not a number", float("nan")),
        ],
    )
    result = make_router({"p": provider}).search(SearchQuery("q"), SearchPolicy([Route("p")]))
    by_id = {h.id: h for h in result.hits}
    assert by_id["s"].relevance == 0.6
    assert by_id["hi"].relevance == 1.0 and by_id["hi"].score == 1.0
    assert by_id["neg"].relevance == 0.0 and by_id["nan"].relevance == 0.0
    assert ids(result)[:2] == ["p/hi", "p/s"]
    assert result.to_json()["hits"][0]["relevance"] == 1.0


def test_expired_hits_are_dropped_by_field_or_metadata(fakes: Any, make_router: Any) -> None:
    past = NOW - timedelta(seconds=1)
    future = NOW + timedelta(hours=1)
    provider = fakes.ScriptedProvider(
        "p",
        [
            fakes.hit("p", "field-past", "a", 0.9, expires_at=past),
            fakes.hit("p", "exact-now", "b", 0.9, expires_at=NOW),
            fakes.hit("p", "meta-past", "c", 0.9, metadata={"paxm_expires_at": "2026-07-01T11:00:00Z"}),
            fakes.hit("p", "legacy-past", "d", 0.9, metadata={"expires_at": "2026-06-30T00:00:00Z"}),
            fakes.hit("p", "future", "e", 0.9, expires_at=future),
            fakes.hit("p", "garbage", "f", 0.9, metadata={"paxm_expires_at": "not a time"}),
        ],
    )
    result = make_router({"p": provider}, clock=clock).search(SearchQuery("q"), SearchPolicy([Route("p")]))
    assert sorted(h.id for h in result.hits) == ["future", "garbage"]
    assert {h.id: h.expires_at for h in result.hits}["future"] == future


def test_tier_filter_uses_field_then_metadata_default_ltm(fakes: Any, make_router: Any) -> None:
    provider = fakes.ScriptedProvider(
        "p",
        [
            fakes.hit("p", "stm-field", "a", 0.9, tier="STM"),
            fakes.hit("p", "stm-meta", "b", 0.9, metadata={"paxm_tier": "stm"}),
            fakes.hit("p", "ltm-default", "c", 0.9),
            fakes.hit("p", "odd", "d", 0.9, tier="weird"),
        ],
    )
    router = make_router({"p": provider})
    stm = router.search(SearchQuery("q"), SearchPolicy([Route("p")], tiers=("stm",)))
    assert sorted(h.id for h in stm.hits) == ["stm-field", "stm-meta"]
    assert {h.tier for h in stm.hits} == {"stm"}
    ltm = router.search(SearchQuery("q"), SearchPolicy([Route("p")], tiers=("ltm",)))
    assert sorted(h.id for h in ltm.hits) == ["ltm-default", "odd"]
    every = router.search(SearchQuery("q"), SearchPolicy([Route("p")]))
    assert len(every.hits) == 4


def test_recency_boost_formula_and_ordering(fakes: Any, make_router: Any) -> None:
    old = fakes.hit("p", "old", "old memory", 0.5, created_at=NOW - timedelta(days=3))
    new = fakes.hit("p", "new", "new memory", 0.5, created_at=NOW - timedelta(hours=12))
    future = fakes.hit("p", "future", "future memory", 0.5, created_at=NOW + timedelta(days=1))
    undated = fakes.hit("p", "undated", "no timestamp", 0.5)
    # one memory per provider, so each is rank 1 and only recency separates them
    providers = {h.id: fakes.ScriptedProvider(h.id, [h]) for h in (old, undated, new, future)}
    router = make_router(providers, clock=clock)
    result = router.search(SearchQuery("q"), SearchPolicy(recency_boost=0.5))
    scores = {h.id: h.score for h in result.hits}
    assert scores["old"] == pytest.approx(0.5 + 0.5 / (1 + 72 / 24))
    assert scores["new"] == pytest.approx(0.5 + 0.5 / (1 + 12 / 24))
    assert scores["future"] == pytest.approx(1.0)
    assert scores["undated"] == pytest.approx(0.5)
    assert [h.id for h in result.hits] == ["future", "new", "old", "undated"]


def test_weight_scales_score_beyond_one(fakes: Any, make_router: Any) -> None:
    router = make_router({"p": fakes.ScriptedProvider("p", [fakes.hit("p", "1", "weighted", 0.8)])})
    result = router.search(SearchQuery("q"), SearchPolicy([Route("p", weight=2.0)]))
    assert result.hits[0].score == pytest.approx(1.6)
    assert result.hits[0].relevance == pytest.approx(0.8)
    zero = router.search(SearchQuery("q"), SearchPolicy([Route("p", weight=0.0)]))
    assert zero.hits[0].score == pytest.approx(0.8)


def test_flat_and_graded_providers_interleave(fakes: Any, make_router: Any) -> None:
    flat = fakes.ScriptedProvider("flat", [fakes.hit("flat", f"f{i}", f"flat {i}", 1.0) for i in range(3)])
    graded = fakes.ScriptedProvider(
        "graded", [fakes.hit("graded", f"g{i}", f"graded {i}", 0.9 - 0.1 * i) for i in range(3)]
    )
    router = make_router({"flat": flat, "graded": graded})
    result = router.search(SearchQuery("q"), SearchPolicy([Route("flat"), Route("graded")], limit=4))
    # ranking = relevance / rank²: f0 1.0, g0 0.9, f1 0.25, g1 0.2 — a flat 1.0 cannot crowd out the graded provider
    assert ids(result) == ["flat/f0", "graded/g0", "flat/f1", "graded/g1"]
    assert [h.score for h in result.hits] == pytest.approx([1.0, 0.9, 1.0, 0.8])


def test_final_tie_break_newer_then_provider_then_id(fakes: Any, make_router: Any) -> None:
    a = fakes.ScriptedProvider("a", [fakes.hit("a", "2", "one", 0.5, created_at="2026-01-01T00:00:00Z")])
    b = fakes.ScriptedProvider("b", [fakes.hit("b", "1", "two", 0.5, created_at="2026-01-02T00:00:00Z")])
    c = fakes.ScriptedProvider("c", [fakes.hit("c", "0", "three", 0.5, created_at="2026-01-01T00:00:00Z")])
    result = make_router({"a": a, "b": b, "c": c}).search(SearchQuery("q"), SearchPolicy())
    assert ids(result) == ["b/1", "a/2", "c/0"]


def test_dedupe_same_text_across_providers_keeps_best(fakes: Any, make_router: Any) -> None:
    scope = {"paxm_scope_type": "personal", "paxm_scope_id": "ann"}
    a = fakes.ScriptedProvider("a", [fakes.hit("a", "1", "Use  PNPM for installs", 0.6, metadata=scope)])
    b = fakes.ScriptedProvider("b", [fakes.hit("b", "9", "use pnpm for\ninstalls", 0.8, metadata=scope)])
    result = make_router({"a": a, "b": b}).search(SearchQuery("q"), SearchPolicy())
    assert ids(result) == ["b/9"]


def test_dedupe_keeps_identical_text_in_different_scopes(fakes: Any, make_router: Any) -> None:
    personal = {"paxm_scope_type": "personal", "paxm_scope_id": "ann"}
    team = {"paxm_scope_type": "team", "paxm_scope_id": "core"}
    provider = fakes.ScriptedProvider(
        "p",
        [
            fakes.hit("p", "1", "deploy on fridays is banned", 0.9, metadata=personal),
            fakes.hit("p", "2", "deploy on fridays is banned", 0.9, metadata=team),
            fakes.hit("p", "3", "Deploy on Fridays is banned", 0.8, metadata=team),
        ],
    )
    result = make_router({"p": provider}).search(SearchQuery("q"), SearchPolicy())
    assert sorted(h.id for h in result.hits) == ["1", "2"]
    assert {h.scope for h in result.hits} == {MemoryScope("personal", "ann"), MemoryScope("team", "core")}


def test_dedupe_empty_text_by_provider_and_id(fakes: Any, make_router: Any) -> None:
    provider = fakes.ScriptedProvider("p", [fakes.hit("p", "x", "", 0.9), fakes.hit("p", "y", "", 0.9)])
    other = fakes.ScriptedProvider("o", [fakes.hit("o", "x", "", 0.9)])
    result = make_router({"p": provider, "o": other}).search(SearchQuery("q"), SearchPolicy())
    assert sorted(ids(result)) == ["o/x", "p/x", "p/y"]


def test_hits_get_attribution_restored_and_provider_stamped(fakes: Any, make_router: Any) -> None:
    meta = {
        "paxm_user_id": "ann",
        "paxm_agent_id": "codex-ann",
        "paxm_session_id": "s1",
        "paxm_turn_id": "t1",
        "paxm_scope_type": "team",
        "paxm_scope_id": "core",
    }
    provider = fakes.ScriptedProvider(
        "p",
        [
            fakes.hit("somewhere-else", "1", "from metadata", 0.9, metadata=meta),
            fakes.hit("p", "2", "legacy provenance", 0.9, provenance=Provenance("bob", "", "personal", "bob")),
            fakes.hit("p", "3", "half a scope", 0.9, metadata={"paxm_scope_type": "team"}),
        ],
    )
    result = make_router({"p": provider}).search(SearchQuery("q"), SearchPolicy())
    by_id = {h.id: h.to_json() for h in result.hits}
    assert by_id["1"]["provider"] == "p"
    assert by_id["1"]["origin"] == {"user_id": "ann", "agent_id": "codex-ann", "session_id": "s1", "turn_id": "t1"}
    assert by_id["1"]["scope"] == {"type": "team", "id": "core"}
    assert by_id["2"]["origin"] == {"user_id": "bob"} and by_id["2"]["scope"] == {"type": "personal", "id": "bob"}
    assert by_id["3"]["scope"] == {"type": "unknown"}
    assert "ranking" not in by_id["1"]


def test_provider_hits_are_not_mutated(fakes: Any, make_router: Any) -> None:
    original = fakes.hit("p", "1", "keep me", 1.4, metadata={"paxm_tier": "stm"})
    provider = fakes.ScriptedProvider("p", [original])
    provider.search = lambda q, d: [original]  # type: ignore[method-assign]
    make_router({"p": provider}).search(SearchQuery("q"), SearchPolicy())
    assert original.relevance == 1.4 and original.tier == "" and original.scope == MemoryScope()


def test_provider_recall_diagnostics(fakes: Any, make_router: Any) -> None:
    provider = fakes.ScriptedProvider(
        "p",
        [
            fakes.hit("p", "1", "a", 0.9, raw_score=-3.2, raw_score_kind="bm25"),
            fakes.hit("p", "2", "b", 0.1, raw_score_kind=" cosine "),
            fakes.hit("p", "3", "c", 0.8, raw_score_kind="bm25"),
        ],
    )
    router = make_router({"p": provider})
    result = router.search(SearchQuery("q"), SearchPolicy([Route("p", timeout=2.5)], min_relevance=0.5))
    (recall,) = result.provider_recalls
    assert recall.to_json() == {
        "provider": "p",
        "duration_ms": recall.duration_ms,
        "outcome": "success",
        "timeout_ms": 2500,
        "candidate_count": 3,
        "eligible_count": 2,
        "raw_score_kinds": ["bm25", "cosine"],
    }
    assert 0 <= recall.duration_ms < 1000


def test_every_provider_call_gets_the_remaining_time(fakes: Any, make_router: Any) -> None:
    from paxm_core import Deadline

    a = fakes.ScriptedProvider("a")
    b = fakes.ScriptedProvider("b")
    router = make_router({"a": a, "b": b})
    router.search(SearchQuery("q"), SearchPolicy([Route("a", timeout=0.5), Route("b")]), Deadline.after(5.0))
    assert 0.3 < a.deadlines[0].remaining() <= 0.5 or a.deadlines[0].cancelled is False
    assert a.deadlines[0].at is not None and b.deadlines[0].at is not None
    assert b.deadlines[0].at - a.deadlines[0].at == pytest.approx(4.5, abs=0.1)
    router.search(SearchQuery("q"), SearchPolicy([Route("b"), Route("a", timeout=0.0)]))
    assert b.deadlines[1].at is None  # no route timeout and no overall deadline: unlimited
    assert a.deadlines[1].at is None  # a zero timeout means none, as upstream


def test_expired_overall_deadline_calls_no_provider(fakes: Any, make_router: Any) -> None:
    from paxm_core import Deadline

    provider = fakes.ScriptedProvider("p", [fakes.hit("p", "1", "x", 0.9)])
    router = make_router({"p": provider})
    result = router.search(SearchQuery("q"), SearchPolicy([Route("p")]), Deadline.cancelled_now())
    assert provider.calls == 0
    assert result.timed_out and result.provider_recalls[0].outcome == "timeout"


def test_recall_result_json_shape(fakes: Any, make_router: Any) -> None:
    bad = fakes.ScriptedProvider("bad", error=RuntimeError("nope"))
    good = fakes.ScriptedProvider("good", [fakes.hit("good", "1", "hello", 0.9)])
    result = make_router({"bad": bad, "good": good}).search(SearchQuery("hello"), SearchPolicy())
    data = result.to_json()
    assert list(data) == ["query", "hits", "provider_errors", "provider_recalls"]
    assert data["query"] == "hello"
    assert data["provider_errors"] == [{"provider": "bad", "required": False, "op": "search", "error": "nope"}]
    empty = make_router({"good": fakes.ScriptedProvider("good")}).search(SearchQuery("x"), SearchPolicy())
    assert empty.to_json()["hits"] == []


def test_naive_timestamps_are_taken_as_utc(fakes: Any, make_router: Any) -> None:
    naive_new = fakes.hit("a", "new", "naive newer", 0.5, created_at=datetime(2026, 7, 1, 11, 0))
    aware_old = fakes.hit("b", "old", "aware older", 0.5, created_at=datetime(2026, 7, 1, 10, 0, tzinfo=UTC))
    router = make_router({"a": fakes.ScriptedProvider("a", [naive_new]), "b": fakes.ScriptedProvider("b", [aware_old])})
    result = router.search(SearchQuery("q"), SearchPolicy())
    assert [h.id for h in result.hits] == ["new", "old"]
    assert result.hits[0].created_at == datetime(2026, 7, 1, 11, 0, tzinfo=UTC)


def test_a_best_hit_under_half_the_threshold_is_no_match(fakes: Any, make_router: Any) -> None:
    # the SQLite store answers a query of punctuation with its newest rows at 0.1: not matches
    hits = [fakes.hit("p", "new", "newest", 0.1), fakes.hit("p", "old", "older", 0.1)]
    router = make_router({"p": fakes.ScriptedProvider("p", hits)})
    assert ids(router.search(SearchQuery("?!", limit=10), SearchPolicy([Route("p")], min_relevance=0.25))) == []
