from __future__ import annotations

from dataclasses import dataclass

from paxm_core.passive.insertion import InsertionPolicy, filter_insertion_hits, significant_query_terms


@dataclass
class Hit:
    text: str
    score: float


HITS = [Hit("Deploy uses blue-green", 0.95), Hit("Cache TTL is seven minutes", 0.9), Hit("Deploy window", 0.5)]


def test_empty_policy_keeps_everything() -> None:
    assert filter_insertion_hits(HITS, "anything", InsertionPolicy()) == HITS


def test_min_score_and_max_items() -> None:
    assert filter_insertion_hits(HITS, "q", InsertionPolicy(min_score=0.8)) == HITS[:2]
    assert filter_insertion_hits(HITS, "q", InsertionPolicy(max_items=1)) == HITS[:1]


def test_query_terms_must_overlap() -> None:
    policy = InsertionPolicy(require_query_terms=True)
    assert filter_insertion_hits(HITS, "how do we DEPLOY?", policy) == [HITS[0], HITS[2]]
    assert filter_insertion_hits(HITS, "ok", policy) == []  # no significant terms: inject nothing
    assert significant_query_terms("Please check about the 缓存策略 v2 api_key") == ["the", "缓存策略", "api", "key"]
