"""The batched document-frequency probe gives the plan exactly what one probe per group gave."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import Deadline, MemoryItem, ProviderConfig
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval import search as search_module
from paxm_provider_sqlite.retrieval.analyzer import Group, analyze_query
from paxm_provider_sqlite.retrieval.frequency import DF_CAP, probe
from paxm_provider_sqlite.retrieval.model import Request, Trace

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


def test_more_groups_than_one_statement_counts(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "m.sqlite")
    _terms_table(conn, *(" ".join(f"t{j}" for j in range(i)) for i in range(150)))
    groups = analyze_query(" ".join(f"t{j}" for j in range(150))).groups
    # t{j} is in every row with i > j: 149 - j rows.
    assert probe(conn, [g.fts() for g in groups]) == [149 - j for j in range(150)]
    assert probe(conn, []) == []
    conn.close()
