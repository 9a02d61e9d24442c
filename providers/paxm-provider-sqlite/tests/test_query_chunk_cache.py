"""The query analysis built from cached per-chunk results equals the one-pass analysis.

``analyze_query`` looks each whitespace chunk up in ``_query_chunks`` (so a long prompt's
repeated vocabulary is analysed once); the groups, their order, the dedupe across chunks, the
stopword fallback, the stream and the surface parts must be exactly what analysing the whole
text in one pass gives, whether the chunks were cached, freshly computed, or the cache was
replaced half-way through.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_provider_sqlite.retrieval import analyzer as A
from paxm_provider_sqlite.retrieval.morphology import STOPWORDS, canonical

_WORDS = st.sampled_from(
    ["the", "a", "of", "Deploy", "deploys", "release/1.2", "v0.9.14", "2026-01-05", "provider_search_timeout"]
    + ["HTTPServer", "fooBar", "x", "retries,", "(Deploy)", "中文", "中", "あいう", "é", "ticket0042", "--", "..."]
)
_TEXT = st.lists(_WORDS | st.text(max_size=12), max_size=40).map(" ".join) | st.text(max_size=80)


def _one_pass(text: str) -> A.QueryAnalysis:
    """The analysis computed without any per-chunk cache (the definition the cache must match)."""
    out = A.QueryAnalysis()
    groups: list[A.Group] = []
    stop_groups: list[A.Group] = []
    seen: set[tuple[str, ...]] = set()

    def add(group: A.Group, stop: bool) -> None:
        key = group.phrase or group.tokens
        if key not in seen:
            seen.add(key)
            (stop_groups if stop else groups).append(group)

    for chunk in text.split():
        parts, cjk = A._chunk_parts(chunk)
        parts = [p for p in parts if len(p) <= A._MAX_PART]
        out.surface.extend(parts)
        numeric = A._numeric_key(chunk)
        if numeric and len(parts) > 1:
            out.stream.extend(canonical(p) for p in parts)
            add(A.Group((numeric,), surface=chunk, salient=True), False)
            parts = []
        for part in parts:
            key = canonical(part)
            out.stream.append(key)
            salient = len(parts) > 1 or any(ch.isdigit() for ch in part)
            add(
                A.Group((key,) if key == part else (key, part), surface=part, salient=salient),
                part in STOPWORDS and len(parts) == 1,
            )
        for run in cjk:
            out.stream.extend(run)
            if len(run) == 1:
                add(A.Group((run,), surface=run, salient=True), False)
            for i in range(len(run) - 1):
                add(
                    A.Group((run[i : i + 2],), phrase=(run[i], run[i + 1]), surface=run[i : i + 2], salient=True), False
                )
    out.groups = groups or stop_groups
    return out


def _analyze(text: str) -> A.QueryAnalysis:
    return A.analyze_query.__wrapped__(text)  # past the lru_cache


@settings(max_examples=300, deadline=None)
@given(text=_TEXT)
def test_cached_chunks_give_the_one_pass_analysis(text: str) -> None:
    expected = _one_pass(text)
    assert _analyze(text) == expected  # chunks computed (or already cached by earlier examples)
    assert _analyze(text) == expected  # every chunk now from the cache


def test_a_full_cache_is_replaced_and_answers_stay_the_same(monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(A, "_CACHE_MAX", 3)
    monkeypatch.setattr(A, "_query_chunks", {})
    text = "the deploy of release/1.2 failed on HTTPServer fooBar the deploy again"
    assert _analyze(text) == _one_pass(text)
    assert len(A._query_chunks) <= 3  # replaced when full, not grown past the bound
    assert _analyze(text) == _one_pass(text)


def test_long_chunks_are_not_cached(monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(A, "_query_chunks", {})
    long_chunk = "x" * (A._MAX_CHUNK + 1)
    assert _analyze(f"deploy {long_chunk}") == _one_pass(f"deploy {long_chunk}")
    assert long_chunk not in A._query_chunks
    assert "deploy" in A._query_chunks
