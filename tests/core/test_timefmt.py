"""``format_time`` / ``parse_time``: the one timestamp format paxm stores and exchanges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from paxm_core.timefmt import format_time, parse_time

_UTC_TIMES = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999))


@given(_UTC_TIMES)
def test_every_time_round_trips(value: datetime) -> None:
    text = format_time(value)
    assert parse_time(text) == value.replace(tzinfo=UTC)
    assert len(text.partition("T")[0]) == 10 and text.endswith("Z")  # four-digit year, always UTC


@given(_UTC_TIMES, st.integers(min_value=-23 * 60, max_value=23 * 60))
def test_an_offset_is_written_as_the_same_instant_in_utc(value: datetime, minutes: int) -> None:
    zone = timezone(timedelta(minutes=minutes))
    aware = value.replace(tzinfo=zone)
    try:
        aware.astimezone(UTC)
    except OverflowError:
        return  # the instant is outside datetime's range in UTC
    assert parse_time(format_time(aware)) == aware


def test_early_years_keep_their_leading_zeros() -> None:
    assert format_time(datetime(7, 3, 9, 1, 2, 3)) == "0007-03-09T01:02:03Z"
    assert format_time(datetime(999, 12, 31, 23, 59, 59, 500000)) == "0999-12-31T23:59:59.5Z"
