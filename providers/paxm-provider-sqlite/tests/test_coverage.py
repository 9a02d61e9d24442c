"""A short query's relaxed hits: a memory sharing a word of it in passing is not a match.

Next to a memory holding most of the question's words, one that holds a single word of it
("production", "days") is noise; one holding half the question or more (a second subject
asked together) is kept.  A long prompt keeps every candidate: its evidence is spread.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.search import COVERAGE_SHARE

NOTES = {
    "pool": "The API reaches Postgres through pgbouncer in transaction pooling mode.",
    "ssh": "Production hosts accept SSH only through the bastion with short-lived certificates.",
    "load": "Load tests run with k6 against staging every Tuesday; production is never load tested.",
    "glacier": "Uploaded invoices move to Glacier after 180 days by a lifecycle rule.",
}


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[SQLiteProvider]:
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(tmp_path / "c.sqlite")))
    prov.put_batch([MemoryItem(id=i, text=t, tier="ltm") for i, t in NOTES.items()], Deadline.none())
    yield prov
    prov.close()


def ids(provider: SQLiteProvider, query: str, limit: int = 10) -> list[str]:
    return [h.id for h in provider.search(SearchQuery(query, limit=limit), Deadline.after(5))]


def test_a_memory_sharing_one_word_in_passing_is_not_returned(provider: SQLiteProvider) -> None:
    # "production" is in ssh and load; pool holds pooling, mode, pgbouncer and api
    assert ids(provider, "which pooling mode does pgbouncer use for the production API") == ["pool"]
    assert provider.last_trace is not None and provider.last_trace.selected == "relaxed"


def test_two_subjects_asked_together_are_both_returned(provider: SQLiteProvider) -> None:
    assert sorted(ids(provider, "pgbouncer pooling and glacier lifecycle")) == ["glacier", "pool"]
    assert sorted(ids(provider, "glacier lifecycle and the k6 load tests")) == ["glacier", "load"]


def test_hits_sharing_the_same_words_are_all_kept(provider: SQLiteProvider) -> None:
    # no hit covers more than another: lexical matching cannot tell them apart
    assert sorted(ids(provider, "production deploy checklist")) == ["load", "ssh"]


def test_the_share_is_relative_to_the_best_hit(provider: SQLiteProvider) -> None:
    assert COVERAGE_SHARE == 0.5
    # the best hit holds one word of three (the others are in no memory): alone, it is kept
    assert ids(provider, "glacier zebra quokka") == ["glacier"]


def test_a_long_prompt_keeps_the_memories_holding_a_few_of_its_words(
    provider: SQLiteProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = (
        "We keep hitting timeouts when the API opens connections during the nightly batch: the "
        "pgbouncer pooling mode, transaction or session, may be wrong, and the staging k6 runs "
        "showed the same thing. Besides, the production bastion certificates expired again and "
        "the uploaded invoices did not reach the archive this quarter, which auditors noticed."
    )
    got = ids(provider, prompt)
    assert got[0] == "pool" and "load" in got
    # even a share of 1 (only the best coverage) leaves a long prompt's candidates alone
    monkeypatch.setattr(sys.modules["paxm_provider_sqlite.retrieval.search"], "COVERAGE_SHARE", 1.0)
    assert ids(provider, prompt) == got
    assert ids(provider, "pgbouncer pooling and the k6 load tests") == ["load"]
