"""The analyzer's fast path for text without CJK characters matches its general path exactly.

Text whose code points all lie below the first CJK range is cut with ``[^\\W_]+`` instead of
the CJK-aware ``_PIECE`` (whose ~39 K-code-point classes take milliseconds to compile, paid
by the daemon's first answer); the two must give the same pieces for every such text, and the
CJK patterns must still be used (and compiled only then) when a CJK character appears.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_provider_sqlite.retrieval import analyzer as A

_CJK_RUN = re.compile(f"[{A._CJK}]+")
_PIECE = re.compile(f"[{A._CJK}]+|[^\\W_{A._CJK}]+")

#: ASCII, Latin-1, Greek/Cyrillic, punctuation just below the CJK ranges, and CJK itself
_ALPHABET = st.sampled_from(
    list("aZ09_-./ \t")
    + ["é", "ß", "Ω", "Ж", "\u00ad", "\u2028", "\u303f", "\u3002"]
    + ["\u3040", "あ", "カ", "中", "한", "\uf900", "\ud7af", "\U0001f600"]
)
_TEXT = st.text(alphabet=_ALPHABET, max_size=40) | st.text(max_size=40)


def _reference_chunk_parts(chunk: str) -> tuple[list[str], list[str]]:
    parts: list[str] = []
    cjk: list[str] = []
    for match in _PIECE.finditer(chunk):
        text = match.group()
        if _CJK_RUN.fullmatch(text):
            cjk.append(text)
        else:
            parts.extend(A._split_atom(text))
    return parts, cjk


@settings(max_examples=400, deadline=None)
@given(text=_TEXT)
def test_pieces_match_the_cjk_aware_pattern(text: str) -> None:
    if A._has_no_cjk(text):
        assert [m.group() for m in A._PLAIN_PIECE.finditer(text)] == [m.group() for m in _PIECE.finditer(text)]
        assert _CJK_RUN.search(text) is None
    for chunk in text.split():
        assert A._chunk_parts(chunk) == _reference_chunk_parts(chunk)


@settings(max_examples=200, deadline=None)
@given(text=_TEXT)
def test_indexing_is_the_same_on_both_paths(text: str) -> None:
    # force the general path for comparison: the same function with the CJK patterns always
    plain = [A._index_chunk(chunk) for chunk in text.split()]
    saved = A._has_no_cjk
    try:
        A._has_no_cjk = lambda _text: False  # type: ignore[assignment]
        general = [A._index_chunk(chunk) for chunk in text.split()]
    finally:
        A._has_no_cjk = saved  # type: ignore[assignment]
    assert plain == general


def _fresh(code: str) -> object:
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_cjk_patterns_are_compiled_only_for_cjk_text() -> None:
    got = _fresh(
        "import json; from paxm_provider_sqlite.retrieval import analyzer as A;"
        " A.analyze_query('how do we deploy the café cache_rollout v1.2?'); A.index_text('Deploy naïve ÆON-9');"
        " before = A._cjk_patterns is None;"
        " q = A.analyze_query('部署 缓存 rollout'); after = A._cjk_patterns is not None;"
        " print(json.dumps([before, after, [list(g.phrase) for g in q.groups]]))"
    )
    assert isinstance(got, list)
    assert got[0] is True and got[1] is True
    assert any("部" in tokens for tokens in got[2])
