"""Wire types: upstream JSON names, lossless round trips, clear errors on bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paxm_core import (
    MemoryHit,
    MemoryItem,
    MemoryOrigin,
    MemoryRef,
    MemoryScope,
    Provenance,
    SearchQuery,
    format_time,
    normalize_tier,
    parse_time,
)

text = st.text(max_size=40)
str_maps = st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=20), max_size=5)
times = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)),
)
origins = st.builds(MemoryOrigin, text, text, text, text)
scopes = st.builds(MemoryScope, text, text)
provenances = st.builds(Provenance, text, text, text, text)


#: the fields a stored memory and a search hit share
stored_fields = {
    "text": text,
    "id": text,
    "source": text,
    "metadata": str_maps,
    "created_at": times,
    "tier": st.sampled_from(["", "stm", "ltm"]),
    "expires_at": times,
    "origin": origins,
    "scope": scopes,
    "provenance": provenances,
}


@given(st.builds(MemoryItem, **stored_fields))
def test_memory_item_round_trips_through_json(item: MemoryItem) -> None:
    wire = json.loads(json.dumps(item.to_json()))
    assert MemoryItem.from_json(wire) == item


@given(
    st.builds(
        MemoryHit,
        provider=text,
        relevance=st.floats(0, 1),
        score=st.floats(0, 1),
        raw_score=st.one_of(st.none(), st.floats(-1e6, 1e6)),
        raw_score_kind=text,
        **stored_fields,
    )
)
def test_memory_hit_round_trips_through_json(hit: MemoryHit) -> None:
    wire = json.loads(json.dumps(hit.to_json()))
    assert MemoryHit.from_json(wire) == hit


def test_hit_json_uses_upstream_field_names() -> None:
    hit = MemoryHit(
        provider="sqlite",
        id="m1",
        text="hello",
        relevance=0.5,
        score=0.5,
        raw_score=3.2,
        raw_score_kind="sqlite_fts_bm25_negated",
        created_at=datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC),
        origin=MemoryOrigin(user_id="u"),
        scope=MemoryScope(type="personal", id="u"),
    )
    assert hit.to_json() == {
        "provider": "sqlite",
        "id": "m1",
        "text": "hello",
        "relevance": 0.5,
        "score": 0.5,
        "raw_score": 3.2,
        "raw_score_kind": "sqlite_fts_bm25_negated",
        "created_at": "2026-01-02T03:04:05.12Z",
        "origin": {"user_id": "u"},
        "scope": {"type": "personal", "id": "u"},
        "provenance": {},
    }


def test_search_query_json_omits_empty_fields_and_reads_them_back() -> None:
    query = SearchQuery(text="q", limit=9, metadata={"workspace": "/w"}, filters={"k": "v"}, tiers=("ltm",))
    assert query.to_json() == {
        "text": "q",
        "limit": 9,
        "metadata": {"workspace": "/w"},
        "filters": {"k": "v"},
        "tiers": ["ltm"],
    }
    assert SearchQuery.from_json(query.to_json()) == query
    assert SearchQuery(text="x").to_json() == {"text": "x"}
    assert MemoryItem(text="t").to_json()["created_at"] == "0001-01-01T00:00:00Z"  # as Go emits it


def test_go_zero_time_and_nanoseconds_are_read() -> None:
    assert parse_time("0001-01-01T00:00:00Z") is None
    parsed = parse_time("2026-07-11T10:00:00.123456789+02:00")
    assert parsed == datetime(2026, 7, 11, 8, 0, 0, 123456, tzinfo=UTC)
    assert format_time(parsed) == "2026-07-11T08:00:00.123456Z"
    with pytest.raises(ValueError):
        parse_time("yesterday")


def test_upstream_plugin_lenient_metadata_is_coerced_but_objects_rejected() -> None:
    item = MemoryItem.from_json({"text": "t", "metadata": {"n": 3, "b": True, "none": None}})
    assert item.metadata == {"n": "3", "b": "true"}
    with pytest.raises(ValueError, match="metadata"):
        MemoryItem.from_json({"text": "t", "metadata": {"nested": {"a": 1}}})
    with pytest.raises(ValueError, match="relevance"):
        MemoryHit.from_json({"provider": "p", "id": "i", "text": "t", "relevance": "high"})


def test_ref_round_trip_and_tier_normalization() -> None:
    ref = MemoryRef("sqlite", "abc")
    assert MemoryRef.from_json(ref.to_json()) == ref
    assert normalize_tier(" STM ") == "stm"
    assert normalize_tier("weird") == "ltm"
    assert normalize_tier(None) == "ltm"


def test_the_json_text_keeps_upstreams_key_order_and_omissions() -> None:
    """Byte for byte, as upstream's Go encoder writes it: the stored queue and plugins see this text."""
    from paxm_core.api.types import ProviderErrorInfo, ProviderHealth, ProviderRecall

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    item = MemoryItem(
        "t",
        "i",
        "s",
        {"k": "v"},
        when,
        "ltm",
        when,
        MemoryOrigin("u", "a"),
        MemoryScope("personal", "u"),
        Provenance(scope_id="x"),
        admission_text="never on the wire",
    )
    assert json.dumps(item.to_json()) == (
        '{"id": "i", "text": "t", "source": "s", "metadata": {"k": "v"}, "created_at": "2026-01-02T03:04:05Z",'
        ' "tier": "ltm", "expires_at": "2026-01-02T03:04:05Z", "origin": {"user_id": "u", "agent_id": "a"},'
        ' "scope": {"type": "personal", "id": "u"}, "provenance": {"scope_id": "x"}}'
    )
    assert json.dumps(MemoryItem("t").to_json()) == (
        '{"text": "t", "created_at": "0001-01-01T00:00:00Z", "origin": {}, "scope": {}, "provenance": {}}'
    )
    odd = MemoryHit("p", "i", "t", relevance=float("nan"), score=float("inf"), raw_score=float("-inf"), ranking=9.0)
    assert json.dumps(odd.to_json()) == (
        '{"provider": "p", "id": "i", "text": "t", "relevance": 0.0, "score": 0.0,'
        ' "created_at": "0001-01-01T00:00:00Z", "origin": {}, "scope": {}, "provenance": {}}'
    )
    assert MemoryHit("p", "i", "t", raw_score=0.0).to_json()["raw_score"] == 0.0  # unset is None, not 0
    assert json.dumps(ProviderRecall("p", 3, "success", bulkhead_busy=True, raw_score_kinds=("k",)).to_json()) == (
        '{"provider": "p", "duration_ms": 3, "outcome": "success", "bulkhead_busy": true, "raw_score_kinds": ["k"]}'
    )
    assert ProviderErrorInfo("p", False, "search", "").to_json() == {
        "provider": "p",
        "required": False,
        "op": "search",
        "error": "",
    }
    assert ProviderHealth("p", True, True).to_json() == {"provider": "p", "required": True, "ok": True}
    assert MemoryRef.from_json({}) == MemoryRef("", "")
    with pytest.raises(ValueError, match=r"^origin\.user_id must be a string$"):
        MemoryOrigin.from_json({"user_id": 1})
    with pytest.raises(ValueError, match="^memory item must be an object$"):
        MemoryItem.from_json([])


def test_result_json_omits_empty_lists_and_keeps_upstreams_order() -> None:
    from paxm_core.api.types import ProviderErrorInfo, ProviderRecall
    from paxm_core.router.policy import RecallResult, RememberResult

    assert json.dumps(RecallResult("q").to_json()) == '{"query": "q", "hits": []}'
    assert json.dumps(RememberResult().to_json()) == '{"refs": []}'
    error = ProviderErrorInfo("p", True, "search", "x")
    full = RecallResult("q", [MemoryHit("p", "1", "t")], [error], [ProviderRecall("p", 1, "error")], True)
    assert list(full.to_json()) == ["query", "hits", "provider_errors", "provider_recalls", "timed_out"]
    assert RecallResult.from_json(full.to_json()) == full
    written = RememberResult([MemoryRef("a", "1")], [error], ["b"])
    assert json.dumps(written.to_json()) == (
        '{"refs": [{"provider": "a", "id": "1"}], "provider_errors": [{"provider": "p", "required": true,'
        ' "op": "search", "error": "x"}], "queued": ["b"]}'
    )
    assert RememberResult.from_json(written.to_json()) == written
