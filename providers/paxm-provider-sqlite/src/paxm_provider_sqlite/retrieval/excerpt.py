"""Extractive excerpts of long hits: the query-bearing segments of the text plus their neighbours,
nothing generated, dropped (fail-open) unless every informative query term survives
(``docs/sqlite-provider.md``, Excerpts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from paxm_provider_sqlite.retrieval.analyzer import Group, QueryAnalysis, analyze_query, index_text
from paxm_provider_sqlite.retrieval.model import Candidate
from paxm_provider_sqlite.retrieval.morphology import ALIAS_SOURCES_BY_KEY

__all__ = ["excerpt_candidates", "excerpt_text"]

MIN_EXCERPT_BYTES = 8192
TOTAL_BUDGET = 8000
MAX_PER_HIT = 2400
MAX_SEGMENT = 800
TOP_SEGMENTS = 3
NEIGHBOURS = 1
GAP = "\n[...]\n"
_OVERLAP = 32
_MARKS = ".!?;。！？；"
_PUNCT = re.compile(f"[{_MARKS}]")
_TEMPORAL_QUERY = ("when", "how long", "how many", "what date", "what day", "what year")
_TEMPORAL_WORDS = tuple(
    "yesterday|last week|last month|last year|years ago|months ago|weeks ago|days ago|"
    "monday|tuesday|wednesday|thursday|friday|saturday|sunday".split("|")
)


def _nbytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _sentence_ends(content: str) -> list[int]:
    """Offsets just past each sentence end (``.``/``;`` count only before whitespace or the end)."""
    ends: list[int] = []
    # Substring tests run at memchr speed; the regex scan is ten times slower on text that
    # has no sentence punctuation at all (logs, padding, CJK without full stops).
    if not any(mark in content for mark in _MARKS):
        return ends
    for match in _PUNCT.finditer(content):
        at = match.end()
        if match.group() in ".;" and at < len(content) and not content[at].isspace():
            continue
        ends.append(at)
    return ends


def _prefix(line: str) -> tuple[str, str]:
    """Split a ``Speaker: text`` line so every chunk of it keeps the speaker."""
    colon = line.find(":")
    if colon <= 0 or _nbytes(line[:colon]) > 64:
        return "", line
    head = line[:colon].strip()
    if any(ch in head for ch in _MARKS):
        return "", line
    return head + ": ", line[colon + 1 :].strip()


def _chunk(prefix: str, text: str) -> list[str]:
    if _nbytes(prefix + text) <= MAX_SEGMENT:
        return [prefix + text]
    room = max(1, MAX_SEGMENT - _nbytes(prefix))
    words = text.split()
    out: list[str] = []
    if len(words) >= 2:
        current = ""
        for word in words:
            if _nbytes(word) > room:
                if current:
                    out.append(prefix + current)
                    current = ""
                out.extend(_windows(prefix, word, room))
                continue
            candidate = f"{current} {word}" if current else word
            if current and _nbytes(candidate) > room:
                out.append(prefix + current)
                current = word
            else:
                current = candidate
        if current:
            out.append(prefix + current)
        return out
    return _windows(prefix, text, room)


def _windows(prefix: str, text: str, room: int) -> list[str]:
    # One unspaced run (CJK, a hash, padding): fixed windows with a small overlap so a term
    # cut at a boundary survives in the next window.
    if text.isascii():
        step = max(1, room - _OVERLAP)
        return [prefix + text[i : i + room] for i in range(0, max(1, len(text) - _OVERLAP), step)]
    out: list[str] = []
    start = 0
    while start < len(text):
        end = start
        size = 0
        while end < len(text):
            width = _nbytes(text[end])
            if end > start and size + width > room:
                break
            size += width
            end += 1
        out.append(prefix + text[start:end])
        if end >= len(text):
            break
        start = max(start + 1, end - _OVERLAP)
    return out


def segments_of(text: str) -> list[str]:
    """The text's segments: non-empty lines, long lines split into <= 800-byte pieces."""
    out: list[str] = []
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if _nbytes(line) <= MAX_SEGMENT:
            out.append(line)
            continue
        prefix, content = _prefix(line)
        start = 0
        pieces: list[str] = []
        for end in _sentence_ends(content):
            sentence = content[start:end].strip()
            if sentence:
                pieces.extend(_chunk(prefix, sentence))
            start = end
        tail = content[start:].strip()
        if tail:
            pieces.extend(_chunk(prefix, tail))
        out.extend(pieces or [line])
    return out


@dataclass
class _Scored:
    """One segment's score parts (one per segment of a long hit, so ``__init__`` is written)."""

    index: int
    matched: int
    phrase: bool
    temporal: bool
    density: float


def _informative(query: QueryAnalysis) -> list[Group]:
    return [g for g in query.groups if not (g.surface.isascii() and len(g.surface) < 3)]


def _probes(groups: list[Group]) -> tuple[str, ...]:
    """Short substrings one of which every segment matching a group must contain.

    Canonical keys keep a word's first three letters (stems only trim endings) and aliases
    add their abbreviations, so a segment without any probe cannot match and is skipped
    without analysis.
    """
    found: set[str] = set()
    for group in groups:
        if group.phrase:
            found.add("".join(group.phrase))
            continue
        for token in group.tokens:
            head = token.split("_")[0]
            found.add(head[:3])
            found.update(short[:3] for short in ALIAS_SOURCES_BY_KEY.get(token, ()))
    return tuple(found)


def _matches(groups: list[Group], segment: str) -> tuple[int, int, str]:
    indexed = index_text(segment)
    hay = f" {indexed.terms} {indexed.extras} "
    tokens = set(hay.split())
    return sum(1 for g in groups if g.present(hay, tokens)), max(1, indexed.unique), hay


def excerpt_text(query_text: str, text: str, budget: int) -> str | None:
    """The excerpt of ``text`` for ``query_text`` within ``budget`` bytes, or ``None`` to keep it whole."""
    query = analyze_query(query_text)
    groups = _informative(query)
    if not groups:
        return None
    segments = segments_of(text)
    if len(segments) < 2:
        return None
    header = 0 if segments[0].startswith("[") and segments[0].endswith("]") else -1
    wants_time = any(marker in query_text.lower() for marker in _TEMPORAL_QUERY)
    raw_phrase = query_text.strip().lower()
    stream_phrase = " " + " ".join(query.stream) + " "
    scored: list[_Scored] = []
    covered: set[int] = set()
    probes = _probes(groups)
    for index, segment in enumerate(segments):
        if index == header:
            continue
        lower = segment.lower()
        if not any(probe in lower for probe in probes):
            continue
        matched, unique, hay = _matches(groups, segment)
        if not matched:
            continue
        tokens = set(hay.split())
        covered.update(i for i, g in enumerate(groups) if g.present(hay, tokens))
        temporal = wants_time and (
            any(ch.isdigit() for ch in segment) or any(word in lower for word in _TEMPORAL_WORDS)
        )
        phrase = bool(raw_phrase) and (raw_phrase in lower or stream_phrase in hay)
        scored.append(_Scored(index, matched, phrase, temporal, matched / unique))
    if len(covered) < len(groups):
        return None  # the text does not carry every term: leave it whole
    scored.sort(key=lambda s: s.index)
    scored.sort(key=lambda s: (s.phrase, s.temporal and wants_time, s.matched, s.density), reverse=True)
    chosen: set[int] = set()
    used = 0

    def take(index: int) -> bool:
        nonlocal used
        if index in chosen:
            return True
        cost = _nbytes(segments[index]) + len(GAP)
        if used + cost > budget:
            return False
        chosen.add(index)
        used += cost
        return True

    if header >= 0:
        take(header)
    for best in scored[:TOP_SEGMENTS]:
        if not take(best.index):
            continue
        for distance in range(1, NEIGHBOURS + 1):
            if best.index - distance >= 0:
                take(best.index - distance)
            if best.index + distance < len(segments):
                take(best.index + distance)
    if not chosen:
        return None
    parts: list[str] = []
    previous = -2
    for index in sorted(chosen):
        if parts:
            parts.append("\n" if index == previous + 1 else GAP)
        parts.append(segments[index])
        previous = index
    excerpt = "".join(parts).strip()
    if excerpt == text:
        return None
    # Fail-open: an excerpt that lost a query term is worse than the whole memory.
    if _matches(groups, excerpt)[0] < len(groups):
        return None
    return excerpt


def excerpt_candidates(query_text: str, hits: list[Candidate], label: str = "sqlite") -> list[Candidate]:
    """Excerpt every hit over 8 KiB in place, noted as ``{label}_excerpted`` and ``{label}_original_bytes``."""
    if not hits:
        return hits
    budget = min(MAX_PER_HIT, TOTAL_BUDGET // len(hits))
    for hit in hits:
        size = _nbytes(hit.text)
        if size <= MIN_EXCERPT_BYTES:
            continue
        excerpt = excerpt_text(query_text, hit.text, budget)
        if excerpt is None:
            continue
        hit.text = excerpt
        hit.extra_metadata[f"{label}_excerpted"] = "true"
        hit.extra_metadata[f"{label}_original_bytes"] = str(size)
    return hits
