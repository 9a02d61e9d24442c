"""Supersession: which recalled memory a newer one replaces, so the older can say so when shown.

A ranking that lets a newer decision win (the SQLite provider's) only moves it up; a reader
still sees the older one below with nothing saying it is out of date.  Here, over the hits of
one recall, a newer memory **supersedes** an older one about the same subject (they share
:data:`SUBJECT_SHARE` of the smaller one's content words) when

* its user text corrects (:func:`is_correction`: "no, we switched to X", "actually, use Y",
  "we no longer ...", "instead", "scratch that"): the strongest signal, whatever the gap; or
* it is ranked above the older one and is at least :data:`SUPERSEDE_AFTER` newer (the rule a
  ranking that prefers newer decisions applies; turns of one exchange stay apart).

Only hits of one result are compared (no extra query); deterministic for given hits.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

__all__ = ["SUBJECT_SHARE", "SUPERSEDE_AFTER", "content_words", "is_correction", "superseded_by"]

SUBJECT_SHARE = 0.4
SUPERSEDE_AFTER = timedelta(minutes=5)
#: Hits compared pairwise (the head of a result).
WINDOW = 50

_WORD = re.compile(r"[^\W_]+(?:_[^\W_]+)*")
# words of capture templates and of corrections themselves: never a subject
_NOISE = frozenset(
    """
    claude code codex user input assistant response turn messages message tool call result activity
    that this with from have were what which when will would should there their about into than then
    them they your just also been does dont don't only some more like make sure okay yeah please
    actually instead switched switch moved migrated changed longer anymore scratch correction
    using used uses now here note remember decided decision going keep want need let's lets
    """.split()
)
_CORRECTION = re.compile(
    r"^\W*(?:no|nope|wrong|not quite|not really)\b"
    r"|\bactually\b|\binstead\b|\bno longer\b|\bnot any ?more\b|\bscratch that\b|\bcorrection\b"
    r"|\b(?:we|i)(?:\s+have|'ve)?\s+(?:switched|moved|migrated|changed)\b|\bswitched (?:over )?to\b",
    re.IGNORECASE,
)


def _user_text(text: str) -> str:
    """The user's words of a captured turn (``... user input: <prompt>``), else the whole text."""
    start = text.find("user input:")
    if start < 0:
        return text
    start += len("user input:")
    end = text.find("assistant response:", start)
    return (
        text[start:] if end < 0 else text[start : text.rfind("\n\n", start, end) if "\n\n" in text[start:end] else end]
    )


@functools.lru_cache(maxsize=4096)  # the same memories come back prompt after prompt
def is_correction(text: str) -> bool:
    """Whether the user's words in ``text`` correct an earlier statement."""
    return bool(_CORRECTION.search(_user_text(text)[:2000].lstrip()))


@functools.lru_cache(maxsize=4096)
def content_words(text: str) -> frozenset[str]:
    """The subject words of ``text``: lower-case words longer than three letters, no template or filler words."""
    words = set()
    for word in _WORD.findall(text.lower()):
        if len(word) > 3 and word not in _NOISE and not word.isdigit():
            words.add(word[:-1] if word.endswith("s") and len(word) > 4 else word)
    return frozenset(words)


def _same_subject(a: frozenset[str], b: frozenset[str]) -> bool:
    smaller = min(len(a), len(b))
    return smaller > 0 and len(a & b) >= SUBJECT_SHARE * smaller


def _when(hit: object) -> datetime | None:
    value = getattr(hit, "created_at", None)
    return value if isinstance(value, datetime) and value.tzinfo is not None else None


def superseded_by(hits: Sequence[Any]) -> dict[int, int]:
    """For each superseded hit's index, the index of the newest hit that supersedes it."""
    head = list(hits[:WINDOW])
    when = [_when(h) for h in head]
    texts = [str(getattr(h, "text", "") or "") for h in head]
    words: dict[int, frozenset[str]] = {}
    corrects: dict[int, bool] = {}
    out: dict[int, int] = {}
    for old, born in enumerate(when):
        if born is None:
            continue
        best = -1
        for new, at in enumerate(when):
            if at is None or at <= born or new == old:
                continue
            if new not in corrects:
                corrects[new] = is_correction(texts[new])
            if not corrects[new] and (new > old or at - born < SUPERSEDE_AFTER):
                continue
            for i in (old, new):
                if i not in words:
                    words[i] = content_words(texts[i])
            if not _same_subject(words[old], words[new]):
                continue
            if best < 0 or at > when[best]:  # type: ignore[operator]
                best = new
        if best >= 0:
            out[old] = best
    return out
