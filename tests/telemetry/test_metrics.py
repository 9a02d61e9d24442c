"""Metrics counting: a batch counts exactly as its events counted one by one.

These tests hold ``Metrics.update_many`` to the per-event definition, including times that
are not ``format_time``'s text (offsets, bad dates, none) and the per-provider counters with
their latency histogram.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.telemetry.metrics import Counter, Metrics

NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)

_names = st.sampled_from(["", "sqlite", "zep", " mem0 "])
_counts = st.one_of(st.none(), st.integers(-3, 3000), st.just("7"), st.just("x"), st.booleans())
_days = st.datetimes(min_value=datetime(2026, 11, 1), max_value=datetime(2026, 12, 5), timezones=st.just(UTC))
_times = st.one_of(
    st.none(),
    st.sampled_from(["", "garbage", "0001-01-01T00:00:00Z", "2026-12-01T25:00:00Z", "2026-02-30T01:00:00Z"]),
    st.sampled_from(["2026-12-01", "2026-12-01T23:30:00-05:00", "2026-12-01T23:30:00"]),
    _days.map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")),
    _days.map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")),
)
_events = st.fixed_dictionaries(
    {},
    optional={
        "time": _times,
        "kind": st.sampled_from(["recall", "hook_recall", "remember", "hook_write", "hook_delivery", "event"]),
        "source": st.sampled_from(["hook", "cli", "capture_queue"]),
        "target": st.sampled_from(["", "codex", "claude-code", "  "]),
        "profile": st.sampled_from(["", "default", "work", None]),
        "hook_event": st.sampled_from(["", "delivery", "user_prompt_submit"]),
        "success": st.booleans(),
        "skipped": st.booleans(),
        "recall_timed_out": st.booleans(),
        "duration_ms": _counts,
        "hit_count": _counts,
        "ref_count": _counts,
        "flushed": _counts,
        "provider_duration_ms": _counts,
        "passive_write_latency_total_ms": _counts,
        "passive_write_samples": _counts,
        "provider": _names,
        "provider_recalls": st.dictionaries(_names, _counts, max_size=3),
        "provider_refs": st.dictionaries(_names, _counts, max_size=3),
        "provider_errors": st.lists(st.fixed_dictionaries({"provider": _names}), max_size=3),
        "provider_recall_details": st.lists(
            st.fixed_dictionaries(
                {
                    "provider": _names,
                    "duration_ms": _counts,
                    "outcome": st.sampled_from(["success", "timeout"]),
                    "bulkhead_busy": st.booleans(),
                }
            ),
            max_size=3,
        ),
    },
)


def _without_clock(doc: dict[str, Any]) -> dict[str, Any]:
    # events without a valid time are stamped "now", which moves between the two runs
    doc.pop("updated_at", None)
    doc.pop("first_seen", None)
    return doc


def _by_hand(events: list[dict[str, Any]]) -> Metrics:
    """The definition: each event's counters added, one event at a time."""
    metrics = Metrics()
    for event in events:
        metrics.update_many([event], 30, now=NOW)
    return metrics


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.lists(_events, max_size=30))
def test_a_batch_counts_as_its_events_one_by_one(events: list[dict[str, Any]]) -> None:
    batch = Metrics()
    batch.update_many(events, 30, now=NOW)
    assert _without_clock(batch.to_json()) == _without_clock(_by_hand(events).to_json())


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.lists(_events, max_size=12))
def test_totals_are_the_sum_of_each_events_counter(events: list[dict[str, Any]]) -> None:
    metrics = Metrics()
    metrics.update_many(events, 0, now=NOW)  # no retention window: no day is pruned
    expected = Counter()
    providers: dict[str, Counter] = {}
    for event in events:
        alone = Metrics()
        alone.update_many([event], 0, now=NOW)
        expected.add(alone.totals)
        for name, counter in alone.providers.items():
            providers.setdefault(name, Counter()).add(counter)
    assert metrics.totals == expected
    assert metrics.providers == providers
    # every day's counters add up to the totals
    days = [metrics.day(key) for key in metrics.day_keys()]
    summed = Counter()
    for day in days:
        assert day is not None
        summed.add(day.counter)
    assert summed == expected


def test_a_delivery_outcome_counts_under_its_day_hook_and_provider() -> None:
    outcome = {
        "kind": "hook_delivery",
        "source": "capture_queue",
        "hook_event": "delivery",
        "success": True,
        "provider": "sqlite",
        "provider_duration_ms": 4,
        "passive_write_latency_total_ms": 120,
        "passive_write_samples": 2,
        "provider_refs": {"sqlite": 1},
    }
    metrics = Metrics()
    metrics.update_many(
        [
            {**outcome, "time": "2026-12-03T23:59:59.5Z"},
            {**outcome, "time": "2026-12-04T00:00:00Z"},
            # an offset: counted on its UTC day (04:30 on the 4th)
            {**outcome, "time": "2026-12-03T23:30:00-05:00"},
            {**outcome, "success": False, "time": "2026-12-04T01:00:00Z"},
        ],
        30,
        now=NOW,
    )
    assert metrics.day_keys() == ["2026-12-03", "2026-12-04"]
    third, fourth = (metrics.day(key) for key in metrics.day_keys())
    assert third is not None and fourth is not None
    assert (third.counter.events, fourth.counter.events) == (1, 3)
    assert (fourth.counter.writes, fourth.counter.errors) == (2, 1)
    assert metrics.hook_events["delivery"].events == 4
    sqlite = metrics.providers["sqlite"]
    assert (sqlite.events, sqlite.refs, sqlite.provider_write_samples) == (4, 4, 3)
    assert (sqlite.provider_write_duration_ms, sqlite.passive_write_samples) == (12, 6)
    assert metrics.first_seen == datetime(2026, 12, 3, 23, 59, 59, 500000, tzinfo=UTC)
    assert metrics.updated_at == datetime(2026, 12, 4, 1, tzinfo=UTC)


def test_a_time_that_does_not_parse_counts_today() -> None:
    metrics = Metrics()
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    metrics.update_many([{"kind": "event", "time": t} for t in ("2026-02-30T01:00:00Z", "2026-12-01T25:00:00Z")], 30)
    assert metrics.day_keys() == [today]
    day = metrics.day(today)
    assert day is not None and day.counter.events == 2


def test_recall_latency_histograms_add_up_per_provider() -> None:
    def recall(*durations: int) -> dict[str, Any]:
        return {
            "kind": "recall",
            "time": "2026-12-04T10:00:00Z",
            "provider_recall_details": [{"provider": "zep", "duration_ms": d} for d in durations],
        }

    metrics = Metrics()
    metrics.update_many([recall(5, 30), recall(3000), recall(9)], 30, now=NOW)
    zep = metrics.providers["zep"]
    assert zep.provider_recall_samples == 4
    assert zep.provider_recall_latency_buckets == [2, 0, 1, 0, 0, 0, 0, 0, 0, 1]
    assert zep.events == 3


def test_unset_times_are_written_as_upstreams_zero_time() -> None:
    from paxm_core.telemetry.history import HistorySummary

    assert Metrics().to_json() == {"version": 1, "updated_at": "0001-01-01T00:00:00Z", "totals": {"events": 0}}
    assert HistorySummary(days=0).to_json() == {
        "days": 0,
        "since": "0001-01-01T00:00:00Z",
        "until": "0001-01-01T00:00:00Z",
        "totals": {"events": 0},
        "storage": {},
    }
