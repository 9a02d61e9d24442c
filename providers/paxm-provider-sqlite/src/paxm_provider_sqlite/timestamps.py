"""Timestamps as stored in the ``memories`` table.

Columns hold RFC 3339 UTC text that upstream can parse.  paxm writes a fixed-width form
(always six fractional digits) so that SQL string comparison is chronological.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

from paxm_core.api.timefmt import parse_time

__all__ = ["normalize_stamp", "parse_stamp", "stamp"]


# A batch stamps the same instants again and again (its "now", a turn's start that is also
# the memory's creation time); equal datetimes give equal text, aware ones across zones too.
@lru_cache(maxsize=1024)
def stamp(value: datetime) -> str:
    """Fixed-width RFC 3339 UTC text for ``value`` (naive values are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    if value.year >= 1000:
        # isoformat is several times cheaper than strftime and gives the same text here; it
        # would zero-pad years below 1000, which strftime (glibc) does not.
        return value.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_stamp(text: str) -> datetime | None:
    """Parse a stored timestamp; empty or unparseable text gives ``None``."""
    try:
        return parse_time(text) if text else None
    except ValueError:
        return None


def normalize_stamp(text: str) -> str:
    """Rewrite any stored RFC 3339 text in the fixed-width form (unparseable text is kept)."""
    parsed = parse_stamp(text)
    return stamp(parsed) if parsed is not None else text
