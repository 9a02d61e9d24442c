"""Oversized capture text: kept, cut to the size limit with a visible marker, never dropped.

A hook event's text goes through the same size limit as ``remember``
(``limits.max_text_bytes``).  Refusing an oversized prompt would store its turn's answer alone;
instead the text keeps its beginning (where a prompt usually states the task) and its end
(where the question usually is), and the marker between them says how much is missing.
"""

from __future__ import annotations

__all__ = ["MARKER", "truncate_text"]

#: what replaces the cut-out middle; ``{n}`` is the number of bytes removed
MARKER = "\n…[paxm: truncated {n} bytes]…\n"


def truncate_text(text: str, limit: int) -> tuple[str, int]:
    """``(text, 0)`` if it fits in ``limit`` UTF-8 bytes, else ``(head + marker + tail, bytes cut)``.

    The result is at most ``limit`` bytes (a limit too small for the marker keeps the head
    alone); it never splits a character.  Three quarters of the room go to the head.
    """
    data = text.encode("utf-8", "surrogatepass")
    if limit <= 0 or len(data) <= limit:
        return text, 0
    room = limit - len(MARKER.format(n=len(data)).encode())  # the widest marker this text can get
    if room <= 0:
        head = data[:limit].decode("utf-8", "ignore")
        return head, len(data) - len(head.encode("utf-8", "surrogatepass"))
    head = data[: room * 3 // 4].decode("utf-8", "ignore")
    tail = data[len(data) - (room - room * 3 // 4) :].decode("utf-8", "ignore")
    cut = len(data) - len(head.encode("utf-8", "surrogatepass")) - len(tail.encode("utf-8", "surrogatepass"))
    return head + MARKER.format(n=cut) + tail, cut
