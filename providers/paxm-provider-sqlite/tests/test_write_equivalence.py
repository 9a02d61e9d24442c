"""The write path's fast helpers produce exactly what the straightforward versions did.

``index_text`` feeds the term index: its output must not change without an
``ANALYZER_VERSION`` bump (stored rows would silently disagree with new ones).  The reference
implementations below are the previous code, kept as the oracle.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_provider_sqlite.records import encode_metadata
from paxm_provider_sqlite.retrieval import analyzer
from paxm_provider_sqlite.retrieval.analyzer import IndexedText, index_text
from paxm_provider_sqlite.timestamps import stamp


def reference_index_text(text: str) -> IndexedText:
    """The per-token loop ``index_text`` replaced (uncached, so the caches are tested too)."""
    stream: list[str] = []
    extras: dict[str, None] = {}
    for chunk in text.split():
        tokens, joined = analyzer._index_chunk(chunk)
        stream.extend(tokens)
        for item in joined:
            extras[item] = None
    return IndexedText(" ".join(stream), " ".join(extras), len(set(stream)) + len(extras))


_WORDS = st.sampled_from(
    [
        "deploy",
        "Deploying",
        "deployment's",
        "HTTPServer",
        "provider_search_timeout",
        "v0.9.14",
        "2026-01-05",
        "E1234:",
        "数据库迁移",
        "カタカナ",
        "a",
        "the",
        "x" * 70,
        "foo.bar/baz-qux",
        "camelCaseWord",
        "ÉCOLE",
        "naïve",
        "--",
        "'quoted'",
        "(paren)",
        "k8s",
        "retries,",
        "\u00a0",
        "\u3000",
        "\x1f",
        "\u2028",
        "(Deploy)",
        "ticket0042,",
        "1.2,",
        "'v2'",
        "A",
        "AB",
        "X1",
        "2fa",
        "V2.",
        '"quoted"',
        "word;",
        "...",
        "(",
        "a1B",
        "Ab1",
        "retries.",
        "((x))",
    ]
)
_ASCII_MIX = st.text(alphabet="aZk09(),.;:'\"!?-_/ Ab", max_size=60)
TEXT = st.one_of(
    st.text(max_size=300),
    _ASCII_MIX,
    st.lists(st.one_of(_WORDS, st.text(max_size=20)), max_size=60).map(" ".join),
    st.lists(_WORDS, max_size=80).map("".join),
)


@settings(max_examples=1500, deadline=None)
@given(TEXT)
def test_index_text_is_byte_identical_to_the_reference(text: str) -> None:
    assert index_text(text) == reference_index_text(text)
    assert index_text(text) == reference_index_text(text)  # a second time: from the cache


def test_index_text_identical_when_the_cache_starts_over(monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(analyzer, "_CACHE_MAX", 3)
    text = "alpha beta gammaDelta v1.2.3 alpha epsilon zeta_eta beta " * 3
    for _ in range(3):
        assert index_text(text) == reference_index_text(text)
    assert len(analyzer._caches[0]) <= 3


def test_index_text_identical_on_threads_while_the_cache_starts_over(monkeypatch: object) -> None:
    """Writers index on several threads: a cache replaced under one never loses a word's forms."""
    import threading

    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(analyzer, "_CACHE_MAX", 7)
    texts = [f"deploy v1.{n % 5}.0 gammaDelta{n % 3} 2026-01-0{n % 9 + 1} foo_bar{n % 4} the end{n}" for n in range(60)]
    expected = [reference_index_text(t) for t in texts]
    wrong: list[str] = []

    def run() -> None:
        for _ in range(20):
            for text, want in zip(texts, expected, strict=True):
                if index_text(text) != want:
                    wrong.append(text)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_long_chunks_are_not_cached() -> None:
    chunk = "ab" * 200  # longer than the cache's chunk bound
    index_text(chunk)
    assert chunk not in analyzer._caches[0]


_STR = st.text(max_size=30)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_STR, _STR, max_size=12))
def test_encode_metadata_is_json_dumps(meta: dict[str, str]) -> None:
    expected = json.dumps(meta, ensure_ascii=False, separators=(",", ":")) if meta else "{}"
    assert encode_metadata(meta) == expected
    assert json.loads(encode_metadata(meta)) == meta


def test_encode_metadata_non_string_values_fall_back_to_the_encoder() -> None:
    odd: dict[str, object] = {"n": 1, "b": True, "z": None}
    assert encode_metadata(odd) == '{"n":1,"b":true,"z":null}'  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.one_of(st.none(), st.integers(min_value=-14 * 60, max_value=14 * 60)),
)
def test_stamp_matches_strftime(value: datetime, offset_minutes: int | None) -> None:
    if offset_minutes is not None:
        value = value.replace(tzinfo=timezone(timedelta(minutes=offset_minutes)))
    utc = (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(UTC)
    assert stamp(value) == utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=30), st.integers(min_value=0, max_value=10**9))
def test_new_words_among_cached_ones_index_like_the_reference(words: list[str], n: int) -> None:
    """A text whose few unseen words (one repeated) sit among cached words and cached joined forms."""
    index_text("provider_search_timeout v0.9.14 " + " ".join(words))  # caches the words and their forms
    fresh = f"ticket{n:09d}"
    text = " ".join([fresh, *words, f"new_ident_{n}", fresh, "provider_search_timeout"])
    assert index_text(text) == reference_index_text(text)
    assert index_text(text) == reference_index_text(text)
