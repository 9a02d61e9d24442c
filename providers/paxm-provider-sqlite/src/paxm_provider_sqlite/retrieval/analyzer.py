"""Lexical analysis shared by indexing and querying (``docs/sqlite-provider.md``, Lexical analysis).

A memory is stored as ``terms`` (the canonical part stream in text order, stopwords and single
CJK characters included, so phrases work) and ``extras`` (joined forms splitting loses:
identifiers, versions, dates).  A query becomes *groups* (one per informative word, satisfied by
any alternative) plus its canonical stream for the phrase stage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress, repeat
from operator import is_

from paxm_core.api.values import value_dataclass
from paxm_provider_sqlite.retrieval.morphology import STOPWORDS, canonical

__all__ = ["ANALYZER_VERSION", "Group", "IndexedText", "QueryAnalysis", "analyze_query", "index_text"]

#: Bump whenever indexing output changes; opening a database analysed by another version
#: re-analyses its rows once (see ``migrations.ensure_analyzer``).
ANALYZER_VERSION = "2"

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
#: the lowest code point of ``_CJK``: text below it holds no CJK character
_CJK_FIRST = "\u3040"
_CHUNK = re.compile(r"\S+")
#: ``_PIECE`` on text without CJK characters: a run of letters and digits (no underscore).
#: There ``[{_CJK}]+`` cannot match and ``[^\W_{_CJK}]`` excludes nothing the text holds, so
#: the matches are the same; this one compiles in microseconds.
_PLAIN_PIECE = re.compile(r"[^\W_]+")
#: (``_CJK_RUN``, ``_PIECE``), compiled when the first text with a code point at or above
#: ``_CJK_FIRST`` comes: their ~39 K-code-point classes cost ~6 ms of ``re``'s compiler, which
#: the daemon's first answer to an English prompt then does not pay.
_cjk_patterns: tuple[re.Pattern[str], re.Pattern[str]] | None = None


def _cjk() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """``_CJK_RUN`` (a run of CJK characters) and ``_PIECE`` (one CJK run, or one run of other
    letters and digits, no underscore), compiled once (a race compiles twice, harmlessly)."""
    global _cjk_patterns
    patterns = _cjk_patterns
    if patterns is None:
        patterns = _cjk_patterns = (re.compile(f"[{_CJK}]+"), re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+"))
    return patterns


def _has_no_cjk(text: str) -> bool:
    """True when ``text`` holds no code point a ``_CJK`` class could match (cheap, in C)."""
    return text.isascii() or max(text) < _CJK_FIRST


_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+[0-9]*")
_NUMERIC = re.compile(r"^v?\d+(?:[.\-:/]\d+)+$", re.IGNORECASE)
# Parts longer than this are hashes, base64 or padding: searchable through memory_fts but
# not worth a place in the term index.
_MAX_PART = 64


@dataclass(frozen=True)
class IndexedText:
    """What the term index stores for one memory."""

    terms: str
    extras: str
    unique: int


@value_dataclass
class Group:
    """One query word: satisfied when any alternative token (or CJK substring) is present."""

    tokens: tuple[str, ...]
    phrase: tuple[str, ...] = ()
    surface: str = ""
    #: From an identifier, number or CJK run: likely distinctive in a long prompt.
    salient: bool = False

    def fts(self) -> str:
        """This group as an FTS5 expression over the term index."""
        if self.phrase:
            return '"' + " ".join(self.phrase) + '"'
        if len(self.tokens) == 1:
            return '"' + self.tokens[0] + '"'
        return "(" + " OR ".join('"' + t + '"' for t in self.tokens) + ")"

    def present(self, hay: str, tokens: frozenset[str] | set[str]) -> bool:
        """Whether a memory satisfies this group, given its padded term string and token set."""
        if self.phrase:
            return " " + " ".join(self.phrase) + " " in hay
        return any(t in tokens for t in self.tokens)


@value_dataclass
class QueryAnalysis:
    """A query reduced to groups and a canonical stream."""

    groups: list[Group] = field(default_factory=list)
    stream: list[str] = field(default_factory=list)
    surface: list[str] = field(default_factory=list)


def _split_atom(atom: str) -> list[str]:
    if atom.isascii():
        pieces = _CAMEL.findall(atom)
        return [p.lower() for p in pieces] if pieces else [atom.lower()]
    return [atom.lower()]


def _chunk_parts(chunk: str) -> tuple[list[str], list[str]]:
    """(latin parts in order, CJK runs) of one whitespace chunk."""
    parts: list[str] = []
    cjk: list[str] = []
    if _has_no_cjk(chunk):
        for atom in _PLAIN_PIECE.finditer(chunk):
            parts.extend(_split_atom(atom.group()))
        return parts, cjk
    cjk_run, piece = _cjk()
    for atom_or_cjk in piece.finditer(chunk):
        text = atom_or_cjk.group()
        if cjk_run.fullmatch(text):
            cjk.append(text)
        else:
            parts.extend(_split_atom(text))
    return parts, cjk


def _numeric_key(chunk: str) -> str:
    core = chunk.strip(".,;:!?()[]{}<>\"'`")
    if _NUMERIC.match(core):
        digits = re.findall(r"\d+", core)
        return "_".join(digits)
    return ""


#: Chunks longer than this are not cached and produce no joined forms (logs, base64, padding).
_MAX_CHUNK = 256
#: Whitespace-free runs longer than this (minified code, base64, padding) get no term-index
#: entries at all; ``memory_fts`` still indexes them, and scanning them would dominate writes.
_MAX_SCANNED_CHUNK = 4096
_ChunkIndex = tuple[tuple[str, ...], tuple[str, ...]]


def _index_chunk(chunk: str) -> _ChunkIndex:
    if len(chunk) > _MAX_SCANNED_CHUNK:
        return (), ()
    if chunk.isascii() and chunk.isalpha() and chunk[1:].islower():
        # the common plain (possibly capitalised) word
        return ((canonical(chunk.lower()),) if len(chunk) <= _MAX_PART else ()), ()
    tokens: list[str] = []
    extras: list[str] = []
    if _has_no_cjk(chunk):
        cjk_run, pieces = None, _PLAIN_PIECE
    else:
        cjk_run, pieces = _cjk()
    for piece in pieces.finditer(chunk):
        value = piece.group()
        if cjk_run is not None and value[0] >= _CJK_FIRST and cjk_run.fullmatch(value):
            tokens.extend(value)
            continue
        if len(value) > _MAX_CHUNK:
            continue
        split = _split_atom(value)
        tokens.extend(canonical(p) for p in split if len(p) <= _MAX_PART)
        if len(split) > 1 and len(value) <= _MAX_PART:
            extras.append("".join(split))
    if len(chunk) <= _MAX_CHUNK:
        raw_parts = [p for p in re.findall(r"[a-z0-9]+", chunk.lower()) if len(p) <= _MAX_PART]
        if len(raw_parts) > 1 and len(tokens) > 1:
            extras.append("_".join(raw_parts))
            extras.append("".join(raw_parts))
        numeric = _numeric_key(chunk)
        if numeric:
            extras.append(numeric)
    return tuple(tokens), tuple(extras)


#: Most chunks the indexing cache holds before it starts over: bounded so a long-running
#: daemon does not grow without limit (~50k distinct words, a few MB).
_CACHE_MAX = 50_000
#: (chunk -> its tokens joined by spaces, "" for none; chunk -> its joined forms, only for the
#: few chunks that have any).  Plain dicts because the lookup runs once per word of every
#: memory written; a prose memory is then looked up with one ``map`` and checked for joined
#: forms with one ``isdisjoint``, both in C.  A pair is only ever added to (forms before the
#: key, so a key found means its forms are there) and is replaced, never cleared, when full:
#: a reader holding the old pair, on any thread, still sees it whole.
_caches: tuple[dict[str, str], dict[str, tuple[str, ...]]] = ({}, {})


_OPENERS = "(\"'"
_CLOSERS = ".,;:!?)\"'"


def _plain_word(chunk: str) -> str:
    """The lowercase word of a chunk that is one ASCII word, possibly in brackets/punctuation.

    Such a chunk (``retries,`` ``(Deploy)`` ``ticket0042`` ``v2``) indexes as that word's
    canonical key alone, whatever :func:`_index_chunk`'s general path would compute: no
    identifier boundary inside, no joined form, no numeric key.  ``""`` for any other chunk.
    """
    if not chunk.isascii():
        return ""
    core = chunk.lstrip(_OPENERS).rstrip(_CLOSERS)
    # A numeric key ("1.2", "2026-01-05") needs a separator inside the core, which is not alnum.
    if not core.isalnum() or core[1:] != core[1:].lower():
        return ""
    return core.lower()


def _index_chunk_cached(chunk: str) -> tuple[str, tuple[str, ...]]:
    """``chunk``'s joined tokens and joined forms, remembered in the caches when short enough."""
    global _caches
    extras: tuple[str, ...]
    word = _plain_word(chunk)
    if word:
        key, extras = (canonical(word) if len(word) <= _MAX_PART else ""), ()
    else:
        tokens, extras = _index_chunk(chunk)
        key = " ".join(tokens)
    if len(chunk) <= _MAX_CHUNK:
        keys, forms = _caches
        if len(keys) >= _CACHE_MAX:
            keys, forms = _caches = ({}, {})
        if extras:
            forms[chunk] = extras
        keys[chunk] = key
    return key, extras


def index_text(text: str) -> IndexedText:
    """The term-index columns for a memory's ``text``.

    Tokens never contain whitespace, so joining each chunk's pre-joined tokens gives the same
    stream as joining every token, and splitting the stream recovers the token set.
    """
    cached, cached_forms = _caches
    chunks = text.split()
    keys = list(map(cached.get, chunks))
    forms_of: dict[str, tuple[str, ...]] = {}
    if None in keys:  # a word not seen yet (or too long to cache): index it, keep its forms
        # Typically one or two new words among dozens: find their positions in C (``compress``
        # on the missed lookups, not a second look at the cache, which another thread may have
        # filled since), index each distinct one once, and patch only those positions (a pass
        # over the whole stream to patch them cost more than the few words it patched).
        fresh: dict[str, str] = {}
        for position in compress(range(len(chunks)), map(is_, keys, repeat(None))):
            chunk = chunks[position]
            key = fresh.get(chunk)
            if key is None:
                key, forms = _index_chunk_cached(chunk)
                fresh[chunk] = key
                if forms:
                    forms_of[chunk] = forms
            keys[position] = key
    if forms_of:
        # forms_of holds only non-empty tuples, so ``get`` with the cached forms as default
        # is ``forms_of.get(c) or cached_forms.get(c)``
        joined = list(map(forms_of.get, chunks, map(cached_forms.get, chunks)))
    elif cached_forms and not cached_forms.keys().isdisjoint(chunks):
        joined = [cached_forms.get(c) for c in chunks]
    else:
        joined = []
    # chunks without tokens (punctuation, over-long parts) have the key "": left out
    terms = " ".join(filter(None, keys)) if "" in keys else " ".join(keys)  # type: ignore[arg-type]
    # distinct tokens: only the distinct chunk keys are split (a repeated word once), not
    # the whole stream again; a chunk key holds whole tokens, so the set is the same
    unique = len(set(" ".join(set(keys)).split()))  # type: ignore[arg-type]
    if not joined:  # most memories: prose without identifiers, versions or dates
        return IndexedText(terms, "", unique)
    extras: dict[str, None] = {}
    for found in filter(None, joined):
        extras.update(dict.fromkeys(found))
    return IndexedText(terms, " ".join(extras), unique + len(extras))


#: What one whitespace chunk contributes to a query analysis: its surface parts, its canonical
#: stream items, and its candidate groups in order as ``(dedupe key, group, is a stopword)``.
_ChunkQuery = tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[tuple[str, ...], Group, bool], ...]]
#: chunk -> its :data:`_ChunkQuery`.  A prompt's analysis depends on each chunk alone (plus the
#: dedupe across chunks), and prompts keep reusing the same words, so a 300-word prompt costs
#: ~300 lookups instead of ~300 regex splits and group constructions.  Bounded like
#: ``_caches``: replaced, never cleared, when full; the groups it holds are never mutated.
_query_chunks: dict[str, _ChunkQuery] = {}


def _analyze_chunk(chunk: str) -> _ChunkQuery:
    """:data:`_ChunkQuery` of one whitespace chunk (uncached)."""
    parts, cjk = _chunk_parts(chunk)
    parts = [p for p in parts if len(p) <= _MAX_PART]
    stream: list[str] = []
    adds: list[tuple[tuple[str, ...], Group, bool]] = []

    def add(group: Group, stop: bool) -> None:
        adds.append((group.phrase or group.tokens, group, stop))

    numeric = _numeric_key(chunk)
    if numeric and len(parts) > 1:
        stream.extend(canonical(p) for p in parts)
        add(Group((numeric,), surface=chunk, salient=True), stop=False)
    else:
        for part in parts:
            key = canonical(part)
            stream.append(key)
            alternatives = (key,) if key == part else (key, part)
            salient = len(parts) > 1 or any(ch.isdigit() for ch in part)
            add(Group(alternatives, surface=part, salient=salient), stop=part in STOPWORDS and len(parts) == 1)
    for run in cjk:
        stream.extend(run)
        if len(run) == 1:
            add(Group((run,), surface=run, salient=True), stop=False)
        for i in range(len(run) - 1):
            bigram = Group((run[i : i + 2],), phrase=(run[i], run[i + 1]), surface=run[i : i + 2], salient=True)
            add(bigram, stop=False)
    return tuple(parts), tuple(stream), tuple(adds)


@lru_cache(maxsize=256)
def analyze_query(text: str) -> QueryAnalysis:
    """Groups and canonical stream of a recall query (stopwords dropped unless nothing else is left).

    Cached (the search and the excerpter analyse the same text); treat the result as read-only.
    """
    global _query_chunks
    out = QueryAnalysis()
    groups: list[Group] = []
    stop_groups: list[Group] = []
    seen: set[tuple[str, ...]] = set()
    cache = _query_chunks
    for chunk in text.split():
        found = cache.get(chunk)
        if found is None:
            found = _analyze_chunk(chunk)
            if len(chunk) <= _MAX_CHUNK:
                if len(cache) >= _CACHE_MAX:
                    cache = _query_chunks = {}
                cache[chunk] = found
        parts, stream, adds = found
        out.surface.extend(parts)
        out.stream.extend(stream)
        for key, group, stop in adds:
            if key not in seen:
                seen.add(key)
                (stop_groups if stop else groups).append(group)
    out.groups = groups or stop_groups
    return out
