"""The stemmer's early exits give exactly the stems of the full rule chain.

``stem`` feeds every stored ``terms`` column: the rule order below is the previous code, kept
as the oracle, and every word (hypothesis-generated and a list of every suffix the rules name)
must stem identically through the module's faster version.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_provider_sqlite.retrieval import morphology


def _reference_inflection(w: str) -> str:
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith(("xes", "ches", "shes", "zzes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is", "ias")) and len(w) > 3:
        w = w[:-1]
    if w.endswith("ied") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("eed"):
        return w
    if w.endswith("ed") and len(w) >= 5 and morphology._has_vowel(w[:-2]):
        return morphology._verb_base(morphology._undouble(w[:-2]))
    if w.endswith("ing") and len(w) >= 6 and morphology._has_vowel(w[:-3]):
        return morphology._verb_base(morphology._undouble(w[:-3]))
    return w


_REFERENCE_DERIVATIONS = (
    ("ification", "ify", 2),
    ("scription", "scrib", 2),
    ("ization", "iz", 3),
    ("ation", "", 5),
    ("ation", "at", 4),
    ("ition", "", 4),
    ("ssion", "ss", 3),
    ("tion", "t", 4),
    ("ment", "", 4),
    ("able", "", 4),
    ("ible", "", 4),
    ("ate", "", 5),
    ("ize", "iz", 3),
)


def _reference_derivation(w: str) -> str:
    for suffix, replacement, keep in _REFERENCE_DERIVATIONS:
        if w.endswith(suffix) and len(w) - len(suffix) >= keep:
            return w[: len(w) - len(suffix)] + replacement
    return w


def reference_stem(word: str) -> str:
    """The previous ``stem`` (uncached)."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha() or word in morphology._UNSTEMMED:
        return word
    w = _reference_inflection(word)
    for _ in range(2):
        nxt = _reference_derivation(w)
        if nxt == w:
            break
        w = nxt
    if len(w) >= 4 and w.endswith("e"):
        w = w[:-1]
    elif len(w) >= 7 and w.endswith("ter"):
        w = w[:-2] + "r"
    return w


_SUFFIXES = sorted(
    {s for s, _, _ in _REFERENCE_DERIVATIONS}
    | {"ies", "sses", "xes", "ches", "shes", "zzes", "s", "ss", "us", "is", "ias", "ied", "eed", "ed", "ing"}
    | {"e", "ter", "at", "tted", "pping", "ations", "ments", "ating", "izing", "ifications", "ers", "ings"}
)
_STEMS = ["", "a", "ab", "oper", "migr", "valid", "regis", "filt", "str", "bbb", "xyz", "deploy", "config", "sh"]


def test_every_suffix_on_short_and_long_stems() -> None:
    words = [s + x for s, x in itertools.product(_STEMS, _SUFFIXES)]
    words += [a + b for a, b in itertools.product(_SUFFIXES, repeat=2)]
    for word in words:
        assert morphology._inflection(word) == _reference_inflection(word), word
        assert morphology._derivation(word) == _reference_derivation(word), word
        assert morphology.stem.__wrapped__(word) == reference_stem(word), word


_LETTERS = st.text(alphabet="aeiouystdgnrmbcxzhlpfk", max_size=14)
_WORD = st.one_of(
    _LETTERS,
    st.tuples(_LETTERS, st.sampled_from(_SUFFIXES), st.sampled_from(["", *_SUFFIXES])).map("".join),
    st.text(max_size=12),
)


@settings(max_examples=2000, deadline=None)
@given(_WORD)
def test_stem_matches_the_reference(word: str) -> None:
    assert morphology.stem(word) == reference_stem(word)
    assert morphology.canonical(word) == (
        morphology.ALIASES.get(word) or morphology._ALIAS_BY_STEM.get(reference_stem(word), reference_stem(word))
    )
