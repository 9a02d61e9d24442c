"""Pure mapping rules: score normalization, the missing-scope detector, result shapes."""

from __future__ import annotations

import math

import pytest

from paxm_core import MemoryItem, SearchQuery
from paxm_core.http_client import HttpStatusError
from paxm_provider_mem0.mapping import hit_from_result, item_metadata, normalize_score, result_objects
from paxm_provider_mem0.selfhosted import is_missing_scope_error


@pytest.mark.parametrize(
    ("raw", "semantics", "expected"),
    [
        (0.8, "similarity", 0.8),
        (0.0, "similarity", 0.0),
        (-0.3, "similarity", 0.0),
        (3.0, "similarity", 0.25),  # unbounded score: 1 / (1 + s)
        (0.0, "distance", 1.0),
        (0.5, "distance", 0.75),  # pgvector cosine distance: 1 - d / 2
        (2.0, "distance", 0.0),
        (2.7, "distance", 0.0),
        (-0.1, "distance", 1.0),
        (math.nan, "similarity", 0.0),
    ],
)
def test_scores_become_higher_is_better_in_the_unit_interval(raw: float, semantics: str, expected: float) -> None:
    assert normalize_score(raw, semantics) == pytest.approx(expected)


def test_distance_order_is_reversed_into_relevance_order() -> None:
    near, far = normalize_score(0.1, "distance"), normalize_score(1.2, "distance")
    assert near > far


def _status(status: int, detail: str) -> HttpStatusError:
    return HttpStatusError("mem0", "search", "x", status=status, detail=detail, retryable=False)


@pytest.mark.parametrize(
    "detail",
    [
        "At least one of 'user_id', 'agent_id', or 'run_id' must be provided.",  # Mem0 0.1.x
        "at least one of 'user_id', 'agent_id', or 'run_id' must be specified",
        "filters must contain at least one of: user_id, agent_id, run_id. Example: {...}",  # Mem0 2.x
    ],
)
def test_both_phrasings_of_the_missing_scope_error_are_recognized(detail: str) -> None:
    for status in (400, 422, 500):
        assert is_missing_scope_error(_status(status, detail))
    assert not is_missing_scope_error(_status(401, detail))


@pytest.mark.parametrize("detail", ["Invalid API key", "at least one of the filters is wrong", ""])
def test_other_errors_are_not_taken_for_a_missing_scope(detail: str) -> None:
    assert not is_missing_scope_error(_status(400, detail))


def test_result_shapes() -> None:
    assert result_objects({"results": [{"id": "a"}, "junk"]}) == [{"id": "a"}]
    assert result_objects({"result": {"id": "b"}}) == [{"id": "b"}]
    assert result_objects([{"id": "c"}]) == [{"id": "c"}]
    assert result_objects({"id": "d"}) == [{"id": "d"}]
    assert result_objects(None) == []


def test_hits_keep_the_raw_score_and_mem0_fields() -> None:
    hit = hit_from_result(
        "m",
        {
            "memory_id": "x1",
            "data": " stored text ",
            "relevance": "0.42",
            "hash": "h",
            "score_details": {"bm25": 1.5},
            "metadata": {"paxm_tier": "stm", "n": 3, "flag": True},
        },
        semantics="similarity",
        kind_prefix="mem0",
        source="mem0",
    )
    assert hit is not None and (hit.id, hit.text, hit.relevance, hit.raw_score) == ("x1", "stored text", 0.42, 0.42)
    assert hit.raw_score_kind == "mem0_similarity" and hit.tier == "stm"
    assert hit.metadata["n"] == "3" and hit.metadata["flag"] == "true" and hit.metadata["mem0_hash"] == "h"
    assert hit.metadata["mem0_score_details"] == '{"bm25": 1.5}'
    unscored = hit_from_result(
        "m", {"id": "y", "memory": "t"}, semantics="similarity", kind_prefix="mem0_cloud", source="s"
    )
    assert unscored is not None and unscored.relevance == 1.0 and unscored.raw_score is None
    assert unscored.raw_score_kind == "mem0_cloud_unscored"
    assert hit_from_result("m", {"id": "z"}, semantics="similarity", kind_prefix="mem0", source="s") is None


def test_scope_keys_in_item_metadata_never_override_the_target() -> None:
    meta = item_metadata(MemoryItem(text="t", metadata={"user_id": "eve", "run_id": "r", "k": "v", "blank": " "}))
    assert "user_id" not in meta and "run_id" not in meta and "blank" not in meta and meta["k"] == "v"
    assert meta["paxm_tier"] == "ltm"


def test_unused_query_fields_do_not_leak() -> None:
    from paxm_provider_mem0.mapping import search_metadata_filters

    q = SearchQuery(text="q", metadata={"workspace": "/w"}, filters={"agent_id": "x", "k": "v"}, tiers=("stm", "stm"))
    assert search_metadata_filters(q) == {"k": "v", "paxm_tier": "stm"}
