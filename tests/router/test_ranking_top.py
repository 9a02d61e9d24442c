"""``ranking.top`` (the recall's cut) gives exactly what the full dedupe and sort give."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import MemoryHit
from paxm_core.api.types import Provenance
from paxm_core.router import ranking

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
VALUES = [0.0, 0.25, 0.5, 0.5, 1.0, 1.5]  # few values, so ties on ranking and score are common


@st.composite
def hit_lists(draw: st.DrawFn) -> list[MemoryHit]:
    count = draw(st.integers(0, 14))
    hits = []
    for index in range(count):
        hit = MemoryHit(
            provider=draw(st.sampled_from(["a", "b", "c"])),
            id=draw(st.sampled_from(["1", "2", str(index)])),
            text=draw(st.sampled_from(["", "Deploy Friday", "deploy  friday", "tabs\there", "other"])),
            relevance=draw(st.sampled_from(VALUES)),
            score=draw(st.sampled_from(VALUES)),
            source=draw(st.sampled_from(["", "cli"])),
            created_at=draw(st.sampled_from([None, NOW, NOW - timedelta(hours=2)])),
            provenance=draw(st.sampled_from([Provenance(), Provenance(scope_type="personal", scope_id="ann")])),
        )
        hit.ranking = draw(st.sampled_from(VALUES))
        hits.append(hit)
    return hits


def full(hits: list[MemoryHit], limit: int) -> list[MemoryHit]:
    kept = ranking.dedupe(hits)
    ranking.sort_hits(kept)
    return kept[:limit] if limit > 0 else kept


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hit_lists(), st.integers(-1, 6))
def test_top_equals_full_dedupe_and_sort(hits: list[MemoryHit], limit: int) -> None:
    expected = full(list(hits), limit)
    got = ranking.top(list(hits), limit)
    assert [id(h) for h in got] == [id(h) for h in expected]


def test_top_with_nan_scores_takes_the_full_path() -> None:
    hits = [MemoryHit("a", str(i), f"text {i}", relevance=0.5, score=float("nan") if i == 2 else 0.5) for i in range(6)]
    for index, hit in enumerate(hits):
        hit.ranking = 1.0 / (index + 1)
    assert [h.id for h in ranking.top(list(hits), 2)] == [h.id for h in full(list(hits), 2)]


def test_top_keeps_the_best_copy_of_a_duplicate_behind_the_cut() -> None:
    # The best copy of "x" ranks first; its weaker copy must not take a second slot.
    hits = [
        MemoryHit("a", "1", "x", relevance=1.0, score=1.0),
        MemoryHit("b", "2", "X ", relevance=0.9, score=0.9),
        MemoryHit("a", "3", "y", relevance=0.8, score=0.8),
    ]
    for hit in hits:
        hit.ranking = hit.score
    assert [h.id for h in ranking.top(hits, 2)] == ["1", "3"]


@st.composite
def provider_answers(draw: st.DrawFn) -> list[tuple[str, list[MemoryHit], float]]:
    answers = []
    for name in ("a", "b", "c"):
        hits = [
            MemoryHit(
                provider=name,
                id=draw(st.sampled_from(["1", "2", str(index)])),
                text=draw(st.sampled_from(["", "Deploy Friday", "deploy  friday", "other"])),
                relevance=draw(st.sampled_from(VALUES)),
                score=draw(st.sampled_from(VALUES)),
                created_at=draw(st.sampled_from([None, NOW, NOW - timedelta(hours=2)])),
            )
            for index in range(draw(st.integers(0, 6)))
        ]
        answers.append((name, hits, draw(st.sampled_from([1.0, 0.5, 2.0, float("inf")]))))
    return answers


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(provider_answers(), st.integers(-1, 5), st.sampled_from([0.0, 0.2]))
def test_the_routers_tuple_cut_equals_top_of_all_candidates(
    answers: list[tuple[str, list[MemoryHit], float]], limit: int, boost: float
) -> None:
    # pipeline.select sorts tuples and makes Candidate objects only for the contenders; it
    # must pick exactly what ranking.top picks from every candidate (infinite weights give
    # NaN keys: the full path)
    from paxm_core.router import Route, SearchPolicy
    from paxm_core.router.pipeline import _candidate, eligible_hits, finite_keys, select

    policy = SearchPolicy(recency_boost=boost)
    entries = [
        entry
        for name, hits, weight in answers
        for entry in eligible_hits(name, hits, Route(name, weight=weight), policy, (), NOW)
    ]
    expected = ranking.top([_candidate(entry) for entry in entries], limit)
    got = select(list(entries), limit)
    key = [(c.provider, c.id, c.text, repr(c.ranking), repr(c.score)) for c in expected]  # repr: NaN == NaN
    assert [(c.provider, c.id, c.text, repr(c.ranking), repr(c.score)) for c in got] == key
    # the router's call: no NaN search when the routes' weights promise finite keys
    routes = [Route(name, weight=weight) for name, _, weight in answers]
    if finite_keys(routes):
        assert all(math.isfinite(k) for entry in entries for k in entry[:2])
        assert [
            (c.provider, c.id, c.text, repr(c.ranking), repr(c.score)) for c in select(list(entries), limit, True)
        ] == key


def reference_sort(hits: list[MemoryHit]) -> list[MemoryHit]:
    """``sort_hits`` as it was written before its C-level tie check (the reference)."""
    keys = [ranking.order_key(h) for h in hits]
    order = sorted(range(len(hits)), key=keys.__getitem__)
    ordered = [hits[i] for i in order]
    sorted_keys = [keys[i] for i in order]
    start = 0
    while start < len(ordered):
        end = start + 1
        while end < len(ordered) and sorted_keys[end] == sorted_keys[start]:
            end += 1
        if end - start > 1:
            ordered[start:end] = sorted(ordered[start:end], key=ranking._full)
        start = end
    return ordered


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hit_lists(), st.lists(st.sampled_from([*VALUES, float("nan")]), max_size=14))
def test_sort_hits_equals_the_reference(hits: list[MemoryHit], rankings: list[float]) -> None:
    # equal keys (same provider, id, text, scope) and NaN rankings included
    for hit, value in zip(hits, rankings, strict=False):
        hit.ranking = value
    got = list(hits)
    ranking.sort_hits(got)
    assert [id(h) for h in got] == [id(h) for h in reference_sort(list(hits))]
