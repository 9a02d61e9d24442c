"""``index_text`` (cache lookups in C, only the missed chunks indexed and patched in) against
an oracle that indexes every chunk from scratch, with the chunk caches cold, warm, or holding
some of the words: the stored ``terms``/``extras``/``nterms`` must not depend on the cache."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_provider_sqlite.retrieval import analyzer as A


def _oracle(text: str) -> tuple[str, str, int]:
    keys: list[str] = []
    extras: dict[str, None] = {}
    for chunk in text.split():
        word = A._plain_word(chunk)
        if word:
            key, forms = (A.canonical(word) if len(word) <= A._MAX_PART else ""), ()
        else:
            tokens, forms = A._index_chunk(chunk)
            key = " ".join(tokens)
        keys.append(key)
        extras.update(dict.fromkeys(forms))
    terms = " ".join(k for k in keys if k)
    return terms, " ".join(extras), len(set(terms.split())) + len(extras)


_WORDS = st.sampled_from(
    ["the", "Deploy", "retries,", "(Deploy)", "ticket0042", "v2", "0.9.14", "2026-01-05", "—", "...", "I/O"]
    + ["provider_search_timeout", "camelCaseWord", "HTTPServer", "a-b-c", "don't", "über", "日本語テキスト"]
    + ["x" * 70, "y" * 300, "1:", "17:", "w9,"]
)
_TEXTS = st.lists(_WORDS | st.text(max_size=12), max_size=40).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=6), st.booleans())
def test_index_text_equals_indexing_every_chunk(texts: list[str], cold: bool) -> None:
    if cold:
        A._caches = ({}, {})
    for text in texts:  # each text warms the caches for the next
        got = A.index_text(text)
        assert (got.terms, got.extras, got.unique) == _oracle(text)
