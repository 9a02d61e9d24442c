"""``format_time`` / ``parse_time``: the one timestamp format paxm stores and exchanges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from paxm_core.api.timefmt import format_time, parse_time

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


_DIGITS = st.text(alphabet="0123456789", min_size=2, max_size=2)


@given(
    st.integers(min_value=0, max_value=9999),
    st.tuples(_DIGITS, _DIGITS, _DIGITS, _DIGITS, _DIGITS),
    st.one_of(st.just(""), st.text(alphabet="0123456789", min_size=1, max_size=9).map(lambda f: "." + f)),
)
def test_the_fast_path_for_canonical_text_parses_as_the_pattern_does(
    year: int, parts: tuple[str, ...], fraction: str
) -> None:
    # canonical-looking text, in range or not (month 13, hour 24, second 60): the C parse
    # must give the same instant, or fail where the pattern parse fails
    from paxm_core.api.timefmt import _parse_rfc3339

    month, day, hour, minute, second = parts
    text = f"{year:04d}-{month}-{day}T{hour}:{minute}:{second}{fraction}Z"

    def outcome(parse: object) -> object:
        try:
            return parse(text)  # type: ignore[operator]
        except ValueError:
            return ValueError

    assert outcome(parse_time) == outcome(_parse_rfc3339)
