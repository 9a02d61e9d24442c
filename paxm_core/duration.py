"""Go-style duration strings (``"250ms"``, ``"1m30s"``, ``"24h"``) as used in upstream config."""

from __future__ import annotations

import re

__all__ = ["format_duration", "parse_duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str | int | float) -> float:
    """Parse a Go duration into seconds; a bare number is taken as seconds.

    Raises ``ValueError`` with the offending text when it is not a duration.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, (int, float)):
        return float(text)
    raw = text.strip()
    if not raw:
        raise ValueError("empty duration")
    sign = 1.0
    body = raw
    if body[0] in "+-":
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if body == "0":
        return 0.0
    try:
        return sign * float(body)
    except ValueError:
        pass
    pos = 0
    total = 0.0
    for match in _PART.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(body) or pos == 0:
        raise ValueError(f'not a duration: {raw!r} (use forms like "250ms", "30s", "24h")')
    return sign * total


def format_duration(seconds: float) -> str:
    """Format seconds as a compact Go duration (``0.25`` → ``"250ms"``, ``86400`` → ``"24h0m0s"``)."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds < 1:
        ms = seconds * 1000
        if ms >= 1 and abs(ms - round(ms)) < 1e-6:
            return f"{sign}{int(round(ms))}ms"
        return f"{sign}{seconds * 1e6:g}µs" if ms < 1 else f"{sign}{ms:g}ms"
    hours, rem = divmod(seconds, 3600)
    minutes, secs = divmod(rem, 60)
    secs_text = f"{secs:.9f}".rstrip("0").rstrip(".") or "0"
    if hours:
        return f"{sign}{int(hours)}h{int(minutes)}m{secs_text}s"
    if minutes:
        return f"{sign}{int(minutes)}m{secs_text}s"
    return f"{sign}{secs_text}s"
