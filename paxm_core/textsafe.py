"""Text that cannot be encoded as UTF-8 (lone UTF-16 surrogates, a cut emoji) is replaced, not fatal.

JSON may carry ``\\ud83d`` alone, and Python decodes it to a lone surrogate that no UTF-8
writer (SQLite, a socket, stdout) accepts.  paxm never drops a turn or a request for its
text: each lone surrogate becomes U+FFFD (the replacement character).  Invalid bytes read
from a file or stdin are decoded with ``errors="replace"`` the same way.

Text printed for a person (``paxm recall``, ``paxm forget``'s preview ...) goes through
:func:`printable`: memory text is untrusted, and a raw ESC, BEL, backspace, CR or C1 control
would let it retitle the terminal, write the clipboard (OSC 52) or redraw what was printed
before it.  ``--json`` output stays exact (JSON escapes control characters itself).

Imports nothing at import time: the hook path uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import re

__all__ = ["REPLACEMENT", "printable", "scrub", "scrub_text"]

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


#: every C0 control but tab and newline, DEL and every C1 control
_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f]"


def _visible(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group(0)):02x}"


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline shown as a visible ``\\xNN`` escape.

    The one rule for text output that holds memory text: ESC (``\\x1b``), BEL, backspace, CR,
    DEL and the C1 controls (``\\x80``-``\\x9f``, among them the 8-bit CSI and OSC) can then
    neither move the cursor, retitle the window, write the clipboard nor hide earlier output.
    """
    import re  # here: only the CLI's text output needs it

    return re.sub(_CONTROL, _visible, text)
