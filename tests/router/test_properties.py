"""Property tests: merged recall output is a pure function of the provider results.

* Whatever order providers finish in (and whatever order the routes are listed in), the
  merged hits — order and dedupe winners — are identical.
* Thresholds, tier filters and expiry never admit a hit they should drop, and never drop one
  they should admit (checked against a small reference model).
"""

from __future__ import annotations

import math
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import MemoryHit, SearchQuery
from paxm_core.router import Route, Router, SearchPolicy
from paxm_core.router.ranking import dedupe_key

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
SCOPES = [
    {},
    {"paxm_scope_type": "personal", "paxm_scope_id": "ann"},
    {"paxm_scope_type": "team", "paxm_scope_id": "core"},
]
TIMES = [None, NOW - timedelta(days=2), NOW - timedelta(hours=1), NOW + timedelta(hours=3)]
EXPIRIES = [None, None, NOW - timedelta(seconds=1), NOW + timedelta(days=1)]

fakes_module: Any = None


def _fakes() -> Any:
    global fakes_module
    if fakes_module is None:
        from paxm_contracttest import fakes

        fakes_module = fakes
    return fakes_module


@st.composite
def hits_for(draw: Any, provider: str) -> list[MemoryHit]:
    out = []
    for _ in range(draw(st.integers(0, 6))):
        relevance = draw(
            st.one_of(
                st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, -0.2, math.nan]),
                st.floats(min_value=-0.5, max_value=1.5, allow_nan=False),
            )
        )
        out.append(
            MemoryHit(
                provider=provider,
                id=draw(st.sampled_from(["a", "b", "c", "d"])),
                text=draw(st.sampled_from(["alpha", "Alpha  ", "beta", "gamma delta", "GAMMA delta", ""])),
                relevance=relevance,
                score=draw(st.sampled_from([0.0, 0.3, 0.9])),
                created_at=draw(st.sampled_from(TIMES)),
                expires_at=draw(st.sampled_from(EXPIRIES)),
                tier=draw(st.sampled_from(["", "stm", "ltm", "STM"])),
                source=draw(st.sampled_from(["", "cli", "hook"])),
                metadata=dict(draw(st.sampled_from(SCOPES))),
            )
        )
    return out


@st.composite
def scenarios(draw: Any) -> tuple[dict[str, list[MemoryHit]], SearchPolicy]:
    names = draw(st.lists(st.sampled_from(["p1", "p2", "p3", "p4"]), min_size=1, max_size=4, unique=True))
    results = {name: draw(hits_for(name)) for name in names}
    routes = [
        Route(
            name,
            weight=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])),
            min_relevance=draw(st.sampled_from([0.0, 0.0, 0.4])),
            min_score=draw(st.sampled_from([0.0, 0.0, 0.6])),
            timeout=draw(st.sampled_from([None, 0.0, 5.0])),  # inline and worker paths
        )
        for name in names
    ]
    policy = SearchPolicy(
        routes=routes,
        limit=draw(st.integers(0, 8)),
        min_relevance=draw(st.sampled_from([0.0, 0.25, 0.5])),
        min_score=draw(st.sampled_from([0.0, 0.25, 0.75])),
        recency_boost=draw(st.sampled_from([0.0, 0.5])),
        tiers=draw(st.sampled_from([(), ("stm",), ("ltm",), ("stm", "ltm")])),
    )
    return results, policy


def _run(
    results: dict[str, list[MemoryHit]], policy: SearchPolicy, release_order: list[str] | None
) -> list[dict[str, Any]]:
    fakes = _fakes()
    gates = {name: threading.Event() for name in results}
    providers = {
        name: fakes.ScriptedProvider(name, hits, gate=gates[name] if release_order else None)
        for name, hits in results.items()
    }
    router = Router(providers, clock=lambda: NOW)
    try:
        if release_order:

            def release() -> None:
                for name in release_order:
                    gates[name].set()
                    time.sleep(0.0005)

            releaser = threading.Thread(target=release)
            releaser.start()
        result = router.search(SearchQuery("q"), policy)
        if release_order:
            releaser.join()
    finally:
        for gate in gates.values():
            gate.set()
        router.close()
    return [h.to_json() | {"_ranking": h.ranking} for h in result.hits]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.randoms(use_true_random=False))
def test_output_independent_of_completion_and_route_order(scenario: Any, rnd: Any) -> None:
    results, policy = scenario
    baseline = _run(results, policy, None)
    order = list(results)
    rnd.shuffle(order)
    assert _run(results, policy, order) == baseline
    shuffled_routes = list(policy.routes)
    rnd.shuffle(shuffled_routes)
    reordered = SearchPolicy(
        shuffled_routes, policy.limit, policy.min_relevance, policy.min_score, policy.recency_boost, policy.tiers
    )
    assert _run(results, reordered, None) == baseline


def _reference_admitted(results: dict[str, list[MemoryHit]], policy: SearchPolicy) -> set[str]:
    """Dedupe keys of every hit the filters should admit (an independent model of the rules)."""
    keys: set[str] = set()
    routes = {r.name: r for r in policy.routes}
    for name, hits in results.items():
        route = routes[name]
        weight = route.weight if route.weight > 0 else 1.0
        min_rel = route.min_relevance or policy.min_relevance
        min_score = route.min_score or policy.min_score
        scored = []
        for hit in hits:
            rel = hit.relevance if (hit.relevance and not math.isnan(hit.relevance)) else hit.score
            rel = 0.0 if math.isnan(rel) else min(1.0, max(0.0, rel))
            tier = "stm" if hit.tier.lower() == "stm" else "ltm"
            if hit.expires_at is not None and hit.expires_at <= NOW:
                continue
            if policy.tiers and tier not in policy.tiers:
                continue
            recency = 0.0
            if policy.recency_boost > 0 and hit.created_at is not None:
                age_h = (NOW - hit.created_at).total_seconds() / 3600
                recency = policy.recency_boost if age_h < 0 else policy.recency_boost / (1 + age_h / 24)
            scored.append((hit, rel, rel * weight + min(1.0, recency)))
        # thresholds are shares of the provider's best (capped at 1); its most relevant hit stays
        top = max(scored, key=lambda s: s[1])[0] if scored else None
        best_score = min(1.0, max((s[2] for s in scored), default=0.0))
        best_rel = max((s[1] for s in scored), default=0.0)
        top_score = next((s[2] for s in scored if s[0] is top), 0.0)
        matched = best_rel >= min_rel / 2 and top_score >= min_score / 2  # else "no match": plain numbers
        for hit, rel, score in scored:
            if not matched and (rel < min_rel or score < min_score):
                continue
            if matched and hit is not top and (rel < min_rel * best_rel or score < min_score * best_score):
                continue
            copy = hit.copy(provider=name)
            from paxm_core.attribution import restore_hit

            restore_hit(copy)
            keys.add(dedupe_key(copy))
    return keys


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_filters_admit_exactly_what_they_should(scenario: Any) -> None:
    results, policy = scenario
    unlimited = SearchPolicy(
        policy.routes, 0, policy.min_relevance, policy.min_score, policy.recency_boost, policy.tiers
    )
    hits = _run(results, unlimited, None)
    routes = {r.name: r for r in policy.routes}
    for hit in hits:
        assert hit["provider"] in routes
        assert 0.0 <= hit["relevance"] <= 1.0
        if policy.tiers:
            assert hit["tier"] in policy.tiers
        if "expires_at" in hit:
            assert hit["expires_at"] > NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    got = {
        f"text:{h['scope'].get('type', '')}:{h['scope'].get('id', '')}:{' '.join(h['text'].lower().split())}"
        if h["text"]
        else f"id:{h['provider']}:{h['id']}"
        for h in hits
    }
    assert got == _reference_admitted(results, policy)
    assert len(got) == len(hits)  # deduped
    limited = _run(results, policy, None)
    assert limited == (hits[: policy.limit] if policy.limit else hits)
