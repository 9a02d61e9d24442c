"""The passive recall query for a prompt longer than the query limit.

A long prompt is mostly pasted material followed by the question, so the query is built from
its end: whole paragraphs until about :data:`TAIL_BYTES` (more pasted text dilutes the
question's words until lexical recall finds nothing).
"""

from __future__ import annotations

from paxm_core.textsafe import scrub_text

__all__ = ["TAIL_BYTES", "bounded_query"]

#: how much of the prompt's end a query built from a long prompt aims for
TAIL_BYTES = 1024


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def bounded_query(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` UTF-8 bytes, else a query from its end that fits.

    Whole paragraphs are taken from the end while the query is under :data:`TAIL_BYTES` and
    the next one still fits in ``limit``.  A last paragraph longer than ``limit`` is cut to its
    longest tail that fits, starting after a newline or a space when one falls within it.
    """
    text = scrub_text(text)  # measured as the recall measures it: a lone surrogate is U+FFFD
    if limit <= 0 or _size(text) <= limit:
        return text
    kept: list[str] = []
    size = 0
    for paragraph in reversed([p.strip() for p in text.split("\n\n") if p.strip()]):
        grown = size + _size(paragraph) + (2 if kept else 0)
        if grown > limit or (kept and size >= min(TAIL_BYTES, limit)):
            break
        kept.append(paragraph)
        size = grown
    if kept:
        return "\n\n".join(reversed(kept))
    data = text.rstrip().encode("utf-8")
    tail = data[len(data) - limit :].decode("utf-8", "ignore")
    for boundary in ("\n", " "):
        at = tail.find(boundary)
        if at != -1 and tail[at:].strip():
            return tail[at + len(boundary) :].strip()
    return tail.strip()
