"""Text that cannot be encoded as UTF-8 (lone UTF-16 surrogates, a cut emoji) is replaced, not fatal.

JSON may carry ``\\ud83d`` alone, and Python decodes it to a lone surrogate that no UTF-8
writer (SQLite, a socket, stdout) accepts.  paxm never drops a turn or a request for its
text: each lone surrogate becomes U+FFFD (the replacement character).  Invalid bytes read
from a file or stdin are decoded with ``errors="replace"`` the same way.

Imports nothing: the hook path uses it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["REPLACEMENT", "scrub", "scrub_text"]

REPLACEMENT = "\ufffd"


def scrub_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (the same object when none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(REPLACEMENT if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text


def scrub(value: Any) -> Any:
    """:func:`scrub_text` applied to every string in a JSON-like value (keys included)."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value
