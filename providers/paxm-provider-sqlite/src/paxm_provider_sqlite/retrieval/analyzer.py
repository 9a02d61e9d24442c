"""Lexical analysis shared by indexing and querying.

Text is cut into whitespace chunks; each chunk yields *parts*: identifiers are split on
``_``/``-``/``.``/``/`` and camelCase/acronym boundaries, CJK runs become single characters,
and every part is reduced to its canonical key (:func:`~.morphology.canonical`).  The index
stores, per memory:

``terms``
    the canonical part stream in text order (stopwords included, so phrases work; CJK
    characters as separate tokens, so a CJK substring is an FTS5 phrase);
``extras``
    joined forms that splitting loses: ``provider_search_timeout`` and
    ``providersearchtimeout`` for identifiers, ``0_9_14`` for versions, dates and error
    numbers.

A query is analysed the same way into *groups* (one per informative word; each group is
satisfied by any of its alternatives) plus its full canonical stream for the phrase stage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from paxm_provider_sqlite.retrieval.morphology import STOPWORDS, canonical

__all__ = ["Group", "IndexedText", "QueryAnalysis", "analyze_query", "index_text"]

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_CHUNK = re.compile(r"\S+")
_ATOM = re.compile(f"[^\\W_{_CJK}]+")
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


@dataclass
class Group:
    """One query word: satisfied when any alternative token (or CJK substring) is present."""

    tokens: tuple[str, ...]
    phrase: tuple[str, ...] = ()
    surface: str = ""

    def fts(self) -> str:
        """This group as an FTS5 expression over the term index."""
        if self.phrase:
            return '"' + " ".join(self.phrase) + '"'
        if len(self.tokens) == 1:
            return '"' + self.tokens[0] + '"'
        return "(" + " OR ".join('"' + t + '"' for t in self.tokens) + ")"

    def present(self, hay: str, text_lower: str) -> bool:
        """Whether a memory (its padded term string ``hay``) satisfies this group."""
        if self.phrase:
            return "".join(self.phrase) in text_lower
        return any(f" {t} " in hay for t in self.tokens)


@dataclass
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
    for atom_or_cjk in re.finditer(f"[{_CJK}]+|[^\\W_{_CJK}]+", chunk):
        text = atom_or_cjk.group()
        if _CJK_RUN.fullmatch(text):
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


def index_text(text: str) -> IndexedText:
    """The term-index columns for a memory's ``text``."""
    stream: list[str] = []
    extras: dict[str, None] = {}
    for match in _CHUNK.finditer(text):
        chunk = match.group()
        if chunk.isascii() and chunk.isalpha() and chunk[1:].islower():
            # fast path: the common plain (possibly capitalised) word
            stream.append(canonical(chunk.lower()) if len(chunk) <= _MAX_PART else "")
            continue
        before = len(stream)
        for piece in re.finditer(f"[{_CJK}]+|[^\\W_{_CJK}]+", chunk):
            value = piece.group()
            if value[0] >= "\u3040" and _CJK_RUN.fullmatch(value):
                stream.extend(value)
                continue
            split = _split_atom(value)
            stream.extend(canonical(p) if len(p) <= _MAX_PART else "" for p in split)
            if len(split) > 1:
                joined = "".join(split)
                if len(joined) <= _MAX_PART:
                    extras[joined] = None
        added = [t for t in stream[before:] if t]
        raw_parts = [p for p in re.findall(r"[a-z0-9]+", chunk.lower()) if len(p) <= _MAX_PART]
        if len(raw_parts) > 1 and len(added) > 1:
            compound = "_".join(raw_parts)
            if len(compound) <= _MAX_PART * 2:
                extras[compound] = None
                extras["".join(raw_parts)] = None
        numeric = _numeric_key(chunk)
        if numeric:
            extras[numeric] = None
    tokens = [t for t in stream if t]
    return IndexedText(" ".join(tokens), " ".join(extras), len(set(tokens)) + len(extras))


def analyze_query(text: str) -> QueryAnalysis:
    """Groups and canonical stream of a recall query (stopwords dropped unless nothing else is left)."""
    out = QueryAnalysis()
    groups: list[Group] = []
    stop_groups: list[Group] = []
    seen: set[tuple[str, ...]] = set()

    def add(group: Group, stop: bool) -> None:
        key = group.phrase or group.tokens
        if key in seen:
            return
        seen.add(key)
        (stop_groups if stop else groups).append(group)

    for match in _CHUNK.finditer(text):
        chunk = match.group()
        parts, cjk = _chunk_parts(chunk)
        parts = [p for p in parts if len(p) <= _MAX_PART]
        out.surface.extend(parts)
        numeric = _numeric_key(chunk)
        if numeric and len(parts) > 1:
            out.stream.extend(canonical(p) for p in parts)
            add(Group((numeric,), surface=chunk), stop=False)
        else:
            for part in parts:
                key = canonical(part)
                out.stream.append(key)
                alternatives = (key,) if key == part else (key, part)
                add(Group(alternatives, surface=part), stop=part in STOPWORDS and len(parts) == 1)
        for run in cjk:
            out.stream.extend(run)
            if len(run) == 1:
                add(Group((run,), surface=run), stop=False)
            for i in range(len(run) - 1):
                add(Group((run[i : i + 2],), phrase=(run[i], run[i + 1]), surface=run[i : i + 2]), stop=False)
    out.groups = groups or stop_groups
    return out
