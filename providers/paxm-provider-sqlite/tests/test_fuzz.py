"""Arbitrary queries and texts never raise anything but a clean result."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.analyzer import analyze_query, index_text

NO_LIMIT = Deadline.none()
FTS_SYNTAX = st.sampled_from(
    ['"', "*", ":", "NEAR(", ")", "AND", "OR", "NOT", "-", "^", "+", "{", "}", "col:", "'", "\\", "\x00", "_", "%"]
)
QUERY = st.lists(st.one_of(FTS_SYNTAX, st.text(max_size=12)), max_size=12).map(" ".join)


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> SQLiteProvider:
    path: Path = tmp_path_factory.mktemp("fuzz") / "m.sqlite"
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(path)))
    prov.put_batch(
        [
            MemoryItem(text='quoted "NEAR(a b)" AND col:value *star* ^caret -minus', id="syntax"),
            MemoryItem(text="数据库迁移 and camelCaseIdentifier v1.2.3", id="mixed"),
            MemoryItem(text="plain words about deployment", id="plain"),
        ],
        NO_LIMIT,
    )
    return prov


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=QUERY, limit=st.integers(min_value=0, max_value=20))
def test_any_query_is_clean(provider: SQLiteProvider, query: str, limit: int) -> None:
    hits = provider.search(SearchQuery(query, limit=limit), NO_LIMIT)
    assert isinstance(hits, list)
    assert len(hits) <= (limit or 50)
    for hit in hits:
        assert 0.0 <= hit.relevance <= 1.0


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300))
def test_analyzer_total(text: str) -> None:
    indexed = index_text(text)
    assert indexed.unique >= 0
    for group in analyze_query(text).groups:
        expr = group.fts()
        assert expr.count('"') % 2 == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=200).filter(lambda t: t.strip() != ""))
def test_any_text_round_trips(provider: SQLiteProvider, text: str) -> None:
    ref = provider.put(MemoryItem(text=text, id="fuzzed"), NO_LIMIT)
    assert ref.id == "fuzzed"
    provider.search(SearchQuery(text, limit=3), NO_LIMIT)
