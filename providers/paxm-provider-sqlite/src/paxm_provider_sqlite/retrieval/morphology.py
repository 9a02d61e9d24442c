"""Conservative English morphology and a small, bounded alias vocabulary.

Weaker than Porter on purpose: over-stemming (``general``/``generous``) creates false recalls, so
only inflections and a few productive derivations fold; words with digits are never stemmed.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["ALIASES", "ALIAS_SOURCES_BY_KEY", "STOPWORDS", "canonical", "stem"]

_VOWELS = frozenset("aeiouy")
_UNDOUBLE = frozenset("bdfgmnprt")

#: English function words: dropped from queries (never from the index, phrases need them).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off
    on once only or other our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves please also let lets us get got
    use used using want wants need needs make made like""".split()
)

# Abbreviation -> the word it abbreviates.  Kept small and unambiguous on purpose: each
# entry is a conflation every developer reading the memory would agree with.
_ALIAS_SOURCES = {
    "repo": "repository",
    "config": "configuration",
    "cfg": "configuration",
    "conf": "configuration",
    "auth": "authentication",
    "authn": "authentication",
    "env": "environment",
    "db": "database",
    "dir": "directory",
    "doc": "documentation",
    "docs": "documentation",
    "k8s": "kubernetes",
    "msg": "message",
    "pkg": "package",
    "dep": "dependency",
    "deps": "dependency",
    "impl": "implementation",
    "info": "information",
    "prod": "production",
    "perf": "performance",
    "spec": "specification",
    "arg": "argument",
    "args": "argument",
    "param": "parameter",
    "params": "parameter",
    "func": "function",
    "fn": "function",
    "lib": "library",
    "app": "application",
    "admin": "administrator",
    "tmp": "temporary",
    "deploy": "deployment",
    "retry": "retry",
    "init": "initialization",
}


def _has_vowel(text: str) -> bool:
    return any(ch in _VOWELS for ch in text)


def _undouble(text: str) -> str:
    if len(text) >= 4 and text[-1] == text[-2] and text[-1] in _UNDOUBLE:
        return text[:-1]
    return text


def _inflection(w: str) -> str:
    # Every rule below needs a final "s" (plurals, then possibly "-ed"/"-ing" on what is left)
    # or a final "d"/"g": most words end otherwise and skip the chain of tests.
    if not w.endswith(("s", "d", "g")):
        return w
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
    if w.endswith("ed") and len(w) >= 5 and _has_vowel(w[:-2]):
        return _verb_base(_undouble(w[:-2]))
    if w.endswith("ing") and len(w) >= 6 and _has_vowel(w[:-3]):
        return _verb_base(_undouble(w[:-3]))
    return w


def _verb_base(w: str) -> str:
    # "validat(ed|ing)" lost the "e" of "-ate"; finish the "-ate" rule so it meets "validate".
    if w.endswith("at") and len(w) - 2 >= 5:
        return w[:-2]
    return w


def _derivation(w: str) -> str:
    if not w.endswith(_DERIVATION_SUFFIXES):  # most words: one test in C instead of the loop
        return w
    for suffix, replacement, keep in _DERIVATIONS:
        if w.endswith(suffix) and len(w) - len(suffix) >= keep:
            return w[: len(w) - len(suffix)] + replacement
    return w


#: (suffix, replacement, shortest stem kept), first match wins.
_DERIVATIONS: tuple[tuple[str, str, int], ...] = (
    ("ification", "ify", 2),
    ("scription", "scrib", 2),
    ("ization", "iz", 3),
    # "-ation" leaves what "-ate" leaves: both strip only from a stem of 5+ letters, and a
    # 4-letter stem keeps its "-at" (migration/migrate/migrating -> "migrat",
    # operation/operate -> "operat"), as the "-ate" and "-ating" rules do.
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
_DERIVATION_SUFFIXES = tuple(dict.fromkeys(suffix for suffix, _, _ in _DERIVATIONS))


#: Words a suffix rule would conflate with an unrelated word (``formation`` is not ``format``).
_UNSTEMMED = frozenset({"formation", "formations"})


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The conservative stem of a lowercase ``word`` (unchanged if short, non-ASCII or numeric)."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha() or word in _UNSTEMMED:
        return word
    w = _inflection(word)
    # Two derivation passes make nested forms agree: implementation -> implement -> imple.
    for _ in range(2):
        nxt = _derivation(w)
        if nxt == w:
            break
        w = nxt
    if len(w) >= 4 and w.endswith("e"):
        w = w[:-1]
    elif len(w) >= 7 and w.endswith("ter"):
        # register/registration, filter(ed)/filtration: "-ation" leaves "...tr".
        w = w[:-2] + "r"
    return w


#: Canonical key of each abbreviation (the stem of the word it abbreviates).
ALIASES = {short: stem(long) for short, long in _ALIAS_SOURCES.items()}
_ALIAS_BY_STEM = {stem(short): key for short, key in ALIASES.items()}


@lru_cache(maxsize=65536)
def canonical(part: str) -> str:
    """The index/query key of one lowercase word part: alias target, else stem."""
    alias = ALIASES.get(part)
    if alias is not None:
        return alias
    stemmed = stem(part)
    return _ALIAS_BY_STEM.get(stemmed, stemmed)


#: Canonical key -> the abbreviations that map to it (used to pre-filter excerpt segments).
ALIAS_SOURCES_BY_KEY: dict[str, tuple[str, ...]] = {}
for _short, _key in ALIASES.items():
    ALIAS_SOURCES_BY_KEY[_key] = (*ALIAS_SOURCES_BY_KEY.get(_key, ()), _short)
