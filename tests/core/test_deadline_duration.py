"""Deadlines and Go-style durations."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paxm_core import Deadline, DeadlineExceeded
from paxm_core.duration import format_duration, parse_duration


def test_unlimited_deadline_reports_infinite_time_and_no_client_timeout() -> None:
    deadline = Deadline.none()
    assert math.isinf(deadline.remaining())
    assert deadline.timeout() is None
    assert deadline.timeout(cap=30) == 30
    deadline.check("search")


def test_expired_deadline_raises_with_operation_name() -> None:
    deadline = Deadline.after(0.01)
    time.sleep(0.02)
    assert deadline.expired()
    with pytest.raises(DeadlineExceeded, match="search deadline exceeded") as info:
        deadline.check("search")
    assert info.value.cancelled is False


def test_cancel_is_seen_by_holder_and_by_children_created_after() -> None:
    deadline = Deadline.after(10)
    child_before = deadline.child(5)
    deadline.cancel()
    assert deadline.remaining() == 0.0
    with pytest.raises(DeadlineExceeded) as info:
        deadline.check("put")
    assert info.value.cancelled
    assert deadline.child(5).cancelled
    assert not child_before.cancelled  # children are cancelled explicitly by their owner


def test_child_never_outlives_parent() -> None:
    parent = Deadline.after(0.5)
    assert parent.child(100).remaining() <= 0.5
    assert parent.child(0.1).remaining() <= 0.1
    assert Deadline.none().child(None).at is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("250ms", 0.25),
        ("30s", 30.0),
        ("1m", 60.0),
        ("24h", 86400.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("0", 0.0),
        ("2", 2.0),
        ("100us", 0.0001),
    ],
)
def test_parse_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "soon", "10 s", "5x", "ms", "1h-2m", True])
def test_bad_durations_name_the_input(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)  # type: ignore[arg-type]


@given(st.floats(min_value=0.001, max_value=10_000_000).map(lambda v: round(v, 3)))
def test_format_then_parse_round_trips(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds, rel=1e-9, abs=1e-9)
