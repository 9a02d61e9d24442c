"""RFC 3339 timestamps as upstream paxm writes them.

Upstream is written in Go and emits ``time.RFC3339Nano``: UTC, ``Z`` suffix, fractional
seconds with trailing zeros trimmed.  Python's ``datetime`` keeps microseconds, so nanosecond
inputs are truncated on parse; everything we format round-trips through :func:`parse_time`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

__all__ = ["format_time", "parse_time", "utcnow", "ZERO_TIME"]

#: Go's zero ``time.Time`` as it appears on the wire; read back as "unset".
ZERO_TIME = "0001-01-01T00:00:00Z"

_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})?$")


def utcnow() -> datetime:
    """Return the current time as an aware UTC datetime."""
    return datetime.now(UTC)


def format_time(value: datetime) -> str:
    """Format ``value`` like Go's RFC3339Nano in UTC (naive values are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    # not strftime: glibc writes year 1 as "1", which is no RFC 3339 timestamp and does not parse back
    base = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if value.microsecond:
        base += "." + f"{value.microsecond:06d}".rstrip("0")
    return base + "Z"


#: the shape ``format_time`` writes (UTC, ``Z``, up to nine fractional digits): for it the C
#: ``datetime.fromisoformat`` gives exactly what the pattern parse below does, ten times
#: faster (every queued event and every telemetry event carries such a time)
_CANONICAL = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z", re.ASCII)


def parse_time(text: str) -> datetime | None:
    """Parse an RFC 3339 timestamp (or ``YYYY-MM-DD``); return ``None`` for empty/zero values.

    Raises ``ValueError`` for text that is not a timestamp.
    """
    if _CANONICAL.fullmatch(text) is not None:
        parsed = datetime.fromisoformat(text)
        return None if _is_zero(parsed) else parsed
    return _parse_rfc3339(text)


def _is_zero(parsed: datetime) -> bool:
    # Go's zero time (and anything on its first minute) means "unset"
    return parsed.year == 1 and parsed.month == 1 and parsed.day == 1 and not parsed.hour and not parsed.minute


def _parse_rfc3339(text: str) -> datetime | None:
    """:func:`parse_time` by pattern: any RFC 3339 text, offsets and ``YYYY-MM-DD`` included."""
    text = text.strip()
    if not text or text == ZERO_TIME:
        return None
    if len(text) == 10:
        day = datetime.strptime(text, "%Y-%m-%d")
        return day.replace(tzinfo=UTC)
    match = _RFC3339.match(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    year, month, day_, hour, minute, second, frac, zone = match.groups()
    micro = int((frac or "0").ljust(6, "0")[:6])
    parsed = datetime(int(year), int(month), int(day_), int(hour), int(minute), int(second), micro, tzinfo=UTC)
    if zone and zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        parsed = parsed - sign * offset
    return None if _is_zero(parsed) else parsed
