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


@dataclass
class KindHit:
    text: str
    score: float
    raw_score_kind: str = ""


def test_semantic_hits_skip_the_shared_word_check_but_not_min_score() -> None:
    from paxm_core import SEMANTIC_SCORE_KIND_PREFIX
    from paxm_core.passive.insertion import is_semantic_hit

    kind = SEMANTIC_SCORE_KIND_PREFIX + "cosine:test-model"
    strong = KindHit("Images are released by the CI pipeline, never by hand", 0.85, kind)
    weak = KindHit("Release notes live in CHANGES.md", 0.5, kind)
    lexical = KindHit("Images are released by the CI pipeline, never by hand", 0.85, "sqlite_fts_bm25_negated")
    assert is_semantic_hit(strong) and not is_semantic_hit(lexical) and not is_semantic_hit(HITS[0])
    policy = InsertionPolicy(min_score=0.8, require_query_terms=True)
    # "how ... ship ... prod" shares no word with the memory: only the semantic flag lets it through.
    assert filter_insertion_hits([strong, weak, lexical], "how do we ship to prod?", policy) == [strong]
    # a query without significant terms still admits nothing, semantic or not
    assert filter_insertion_hits([strong], "ok", policy) == []


def test_min_score_is_a_share_of_the_best_hit() -> None:
    # A decision ranked first at 0.33 reaches the model under a 0.35 bar; the hits after it
    # need the bar's share of it (0.35 x 0.33), so a distant third stays out.
    hits = [Hit("Deploy uses blue-green", 0.33), Hit("Deploy window is Friday", 0.2), Hit("Deploy", 0.05)]
    assert filter_insertion_hits(hits, "deploy", InsertionPolicy(min_score=0.35)) == hits[:2]
    assert filter_insertion_hits(hits, "deploy", InsertionPolicy(min_score=0.65)) == hits[:1]


def test_a_first_hit_found_by_meaning_alone_still_needs_min_score() -> None:
    from paxm_core import SEMANTIC_SCORE_KIND_PREFIX

    weak = KindHit("Release notes live in CHANGES.md", 0.5, SEMANTIC_SCORE_KIND_PREFIX + "cosine:test-model")
    assert filter_insertion_hits([weak], "how do we ship?", InsertionPolicy(min_score=0.8)) == []
    assert filter_insertion_hits([weak], "how do we ship?", InsertionPolicy(min_score=0.5)) == [weak]


def test_a_first_hit_under_half_the_bar_is_no_match_and_the_bar_is_plain_again() -> None:
    hits = [Hit("Deploy notes", 0.3), Hit("Deploy", 0.29)]
    assert filter_insertion_hits(hits, "deploy", InsertionPolicy(min_score=0.8)) == []
    assert filter_insertion_hits(hits, "deploy", InsertionPolicy(min_score=0.6)) == hits
