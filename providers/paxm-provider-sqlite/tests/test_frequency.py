"""The batched, cached document-frequency source gives the plan exactly what one probe per group gave."""

from __future__ import annotations

import importlib
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.analyzer import Group, analyze_query
from paxm_provider_sqlite.retrieval.frequency import DF_CAP, DocumentFrequencies, probe
from paxm_provider_sqlite.retrieval.model import Request, Trace

# The package re-exports the function under the module's name.
search_module = importlib.import_module("paxm_provider_sqlite.retrieval.search")

NO_LIMIT = Deadline.none()
# A vocabulary whose words land on both sides of DF_CAP in a corpus of ~700 memories:
# "w0" is in nearly every memory, "w40" in a handful, and identifiers/CJK add OR groups
# and phrase groups.
VOCAB = [f"w{i}" for i in range(60)] + ["deployRunner", "v1.2.3", "数据库", "running", "ran"]


def _old_probe(conn: sqlite3.Connection, group: Group) -> int:
    """The document-frequency probe recall used before: one bounded count per group."""
    row = conn.execute(
        "SELECT count(*) FROM (SELECT rowid FROM memory_terms WHERE memory_terms MATCH ? LIMIT ?)",
        (group.fts(), DF_CAP),
    ).fetchone()
    return int(row[0])


def _text(rng: random.Random) -> str:
    # Zipf-like: low indexes far more frequent, so some words pass the cap and some do not.
    words = [VOCAB[min(len(VOCAB) - 1, int(rng.paretovariate(0.7)) - 1)] for _ in range(rng.randint(3, 14))]
    return " ".join(words)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteProvider]:
    path: Path = tmp_path_factory.mktemp("frequency") / "m.sqlite"
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(path)))
    rng = random.Random(23)
    prov.put_batch([MemoryItem(text=_text(rng), id=f"m{i}") for i in range(700)], NO_LIMIT)
    yield prov
    prov.close()


def _conn(prov: SQLiteProvider) -> sqlite3.Connection:
    return sqlite3.connect(prov.path)


def test_the_corpus_has_groups_on_both_sides_of_the_cap(corpus: SQLiteProvider) -> None:
    conn = _conn(corpus)
    counts = [_old_probe(conn, g) for g in analyze_query(" ".join(VOCAB)).groups]
    assert DF_CAP in counts, "some group must reach the cap"
    assert any(0 < c < DF_CAP for c in counts), "some group must stay below it"
    conn.close()


QUERY = st.lists(st.sampled_from([*VOCAB, "absentword", "w7-w9", "deploy_runner"]), min_size=1, max_size=90).map(
    " ".join
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=QUERY)
def test_batched_counts_equal_one_probe_per_group(corpus: SQLiteProvider, text: str) -> None:
    conn = _conn(corpus)
    groups = analyze_query(text).groups
    expected = [_old_probe(conn, g) for g in groups]
    assert probe(conn, [g.fts() for g in groups]) == expected
    cache = DocumentFrequencies()
    assert cache.of(conn, groups) == expected
    assert cache.of(conn, groups) == expected, "a cached answer must equal the probe"
    conn.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=QUERY, limit=st.integers(min_value=0, max_value=8))
def test_cached_plan_equals_uncached_plan(corpus: SQLiteProvider, text: str, limit: int) -> None:
    """Same candidates, scores, stage and trace whether frequencies come from the cache or not."""
    conn = _conn(corpus)
    request = Request(text=text, limit=limit)
    fresh_trace, warm_trace = Trace(), Trace()
    cache = DocumentFrequencies()
    search_module.search(conn, request, NO_LIMIT, Trace(), cache)  # fill the cache
    fresh = search_module.search(conn, request, NO_LIMIT, fresh_trace)
    warm = search_module.search(conn, request, NO_LIMIT, warm_trace, cache)
    assert [(c.id, c.score, c.density, c.rrf, c.raw_score) for c in warm] == [
        (c.id, c.score, c.density, c.rrf, c.raw_score) for c in fresh
    ]
    assert warm_trace == fresh_trace
    conn.close()


def test_whole_rows_fetched_with_candidates_equal_loaded_rows(corpus: SQLiteProvider) -> None:
    """A rare strict hit takes its rows from the candidate query; they must be the stored rows."""
    corpus.put(MemoryItem(text="uniqueMarker4242 w1 w2", id="rare", source="test", metadata={"k": "v"}), NO_LIMIT)
    conn = _conn(corpus)
    found = search_module.search(conn, Request(text="uniqueMarker4242", limit=5), NO_LIMIT, Trace())
    assert [c.id for c in found] == ["rare"]
    stored = conn.execute(
        "SELECT id, text, source, metadata_json, created_at, tier, expires_at FROM memories WHERE id = 'rare'"
    ).fetchone()
    got = found[0]
    assert (got.id, got.text, got.source, got.metadata_json, got.created_at, got.tier, got.expires_at) == stored
    conn.close()
    corpus.delete(corpus.put(MemoryItem(text="x", id="rare"), NO_LIMIT), NO_LIMIT)


def _terms_table(conn: sqlite3.Connection, *rows: str) -> None:
    """Creates the ``memory_terms`` table the counts read, holding ``rows``, and commits."""
    conn.execute("CREATE VIRTUAL TABLE memory_terms USING fts5(terms, extras)")
    conn.executemany("INSERT INTO memory_terms(terms, extras) VALUES (?, '')", [(row,) for row in rows])
    conn.commit()


def test_a_write_on_the_same_connection_empties_the_cache(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "m.sqlite")
    _terms_table(conn, "alpha beta")
    cache = DocumentFrequencies()
    groups = analyze_query("alpha gamma").groups
    assert cache.of(conn, groups) == [1, 0]
    conn.execute("INSERT INTO memory_terms(terms, extras) VALUES ('alpha gamma', '')")
    conn.commit()
    assert cache.of(conn, groups) == [2, 1]
    probed = cache.probed
    assert cache.of(conn, groups) == [2, 1]
    assert cache.probed == probed, "nothing written: the second lookup is served from the cache"
    conn.close()


def test_a_commit_by_another_connection_empties_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    reader, writer = sqlite3.connect(path), sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    _terms_table(writer, "alpha")
    cache = DocumentFrequencies()
    groups = analyze_query("alpha").groups
    assert cache.of(reader, groups) == [1]
    writer.execute("INSERT INTO memory_terms(terms, extras) VALUES ('alpha', '')")
    writer.commit()
    assert cache.of(reader, groups) == [2]
    writer.execute("DELETE FROM memory_terms")
    writer.commit()
    assert cache.of(reader, groups) == [0]
    reader.close()
    writer.close()


def test_counts_seen_inside_a_transaction_are_not_kept_past_its_rollback(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "m.sqlite")
    _terms_table(conn)
    cache = DocumentFrequencies()
    groups = analyze_query("alpha").groups
    assert cache.of(conn, groups) == [0]
    conn.execute("INSERT INTO memory_terms(terms, extras) VALUES ('alpha', '')")
    assert conn.in_transaction
    assert cache.of(conn, groups) == [1]
    conn.rollback()
    assert cache.of(conn, groups) == [0]
    conn.close()


def test_more_groups_than_one_statement_counts(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "m.sqlite")
    _terms_table(conn, *(" ".join(f"t{j}" for j in range(i)) for i in range(150)))
    groups = analyze_query(" ".join(f"t{j}" for j in range(150))).groups
    # t{j} is in every row with i > j: 149 - j rows.
    assert DocumentFrequencies().of(conn, groups) == [149 - j for j in range(150)]
    conn.close()


def test_provider_search_probes_once_until_a_write(tmp_path: Path) -> None:
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(tmp_path / "m.sqlite")))
    prov.put(MemoryItem(text="alpha beta gamma", id="a"), NO_LIMIT)
    query = SearchQuery("gamma alpha", limit=5)
    first = prov.search(query, NO_LIMIT)
    frequencies = prov._frequencies
    probed = frequencies.probed
    assert prov.search(query, NO_LIMIT) == first
    assert frequencies.probed == probed
    prov.put(MemoryItem(text="alpha gamma", id="b"), NO_LIMIT)
    assert {h.id for h in prov.search(query, NO_LIMIT)} == {"a", "b"}
    assert frequencies.probed == probed + 2
    prov.close()


def test_a_commit_between_two_partly_cached_lookups_is_seen(tmp_path: Path) -> None:
    """Counts kept from before another connection's commit are re-probed with the new ones."""
    path = tmp_path / "m.sqlite"
    reader, writer = sqlite3.connect(path), sqlite3.connect(path)
    _terms_table(writer, "alpha")
    cache = DocumentFrequencies()
    assert cache.of(reader, analyze_query("alpha").groups) == [1]
    writer.execute("INSERT INTO memory_terms(terms, extras) VALUES ('alpha beta', '')")
    writer.commit()
    assert cache.of(reader, analyze_query("alpha beta").groups) == [2, 1]
    assert probe(reader, []) == []
    reader.close()
    writer.close()
