"""``utc_stamp`` is the fixed-width ``strftime`` form for any instant, in any order, with a
microsecond that rounds up into the next second."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.capture._inbox import utc_stamp


def _strftime_stamp(epoch: float) -> str:
    micros = int(round(epoch * 1_000_000))
    seconds, fraction = divmod(micros, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:06d}Z"


instants = st.floats(min_value=0, max_value=4e9, allow_nan=False) | st.sampled_from(
    [0.0, 0.9999996, 59.9999999, 1e9 - 4e-7, 1e9, 1e9 + 0.5]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(instants, min_size=1, max_size=20))
def test_stamps_equal_the_strftime_form_in_any_order(epochs: list[float]) -> None:
    for epoch in epochs:
        assert utc_stamp(epoch) == _strftime_stamp(epoch)
        assert utc_stamp(epoch + 1e-6) == _strftime_stamp(epoch + 1e-6)  # same second, mostly


def test_a_rounded_up_microsecond_moves_to_the_next_second() -> None:
    assert utc_stamp(1e9 - 4e-7) == "2001-09-09T01:46:40.000000Z"
    assert utc_stamp(1e9 - 1.0) == "2001-09-09T01:46:39.000000Z"
