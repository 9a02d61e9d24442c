"""Aggregated counters: the metrics file and the history summary built from it.

``metrics.json`` keeps running totals plus one bucket per UTC day (pruned to the retention
window), each broken down by agent, profile, hook event and provider.  JSON names match
upstream's, so a metrics file written by either implementation can be read by the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field, fields
from datetime import date, datetime, timedelta
from typing import Any, SupportsInt

from paxm_core.api.json import JSONObject
from paxm_core.api.timefmt import ZERO_TIME, format_time, parse_time, utcnow
from paxm_core.api.values import value_dataclass

__all__ = ["LATENCY_BOUNDS_MS", "Counter", "DailyMetric", "Metrics", "provider_recall_p95_ms"]

METRICS_VERSION = 1
#: Upper bounds (ms) of the provider recall latency histogram; one overflow bucket follows.
LATENCY_BOUNDS_MS: tuple[int, ...] = (10, 25, 50, 100, 250, 500, 800, 1000, 2000)


@value_dataclass(slots=True)
class Counter:
    """One set of counters (totals, a day, an agent, a provider...)."""

    events: int = 0
    successes: int = 0
    errors: int = 0
    skipped: int = 0
    recalls: int = 0
    hits: int = 0
    inserted: int = 0
    writes: int = 0
    items: int = 0
    refs: int = 0
    flushes: int = 0
    provider_errors: int = 0
    provider_recall_samples: int = 0
    provider_recall_duration_ms: int = 0
    provider_recall_timeouts: int = 0
    provider_recall_bulkhead_skips: int = 0
    recall_timeouts: int = 0
    provider_recall_latency_buckets: list[int] = field(default_factory=list)
    duration_ms: int = 0
    provider_write_samples: int = 0
    provider_write_duration_ms: int = 0
    passive_write_latency_total_ms: int = 0
    passive_write_samples: int = 0

    def add(self, other: Counter) -> None:
        for name in _SCALARS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        _add_buckets(self.provider_recall_latency_buckets, other.provider_recall_latency_buckets)

    def to_json(self) -> JSONObject:
        """``events`` always, the rest only when non-zero (upstream's ``omitempty``)."""
        out: JSONObject = {"events": self.events}
        for name in _FIELD_NAMES[1:]:
            value = getattr(self, name)
            if value:
                out[name] = list(value) if name == _BUCKETS else value
        return out

    @classmethod
    def from_json(cls, data: object) -> Counter:
        """Read a counter, ignoring unknown keys and values of the wrong type."""
        counter = cls()
        if not isinstance(data, Mapping):
            return counter
        for name, value in data.items():
            if name in _SCALARS:
                setattr(counter, name, as_int(value))
            elif name == _BUCKETS and isinstance(value, list):
                counter.provider_recall_latency_buckets = [as_int(v) for v in value]
        return counter


_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Counter))
_BUCKETS = "provider_recall_latency_buckets"
_SCALARS: tuple[str, ...] = tuple(name for name in _FIELD_NAMES if name != _BUCKETS)


def _counter_in(counters: dict[str, Counter], name: str) -> Counter:
    # not ``setdefault(name, Counter())``: that builds a counter per event and breakdown
    counter = counters.get(name)
    if counter is None:
        counter = counters[name] = Counter()
    return counter


def as_int(value: object) -> int:
    """``int(value)``, or 0 where that fails."""
    # ints and None (most counted fields are absent from most events) answer before the
    # SupportsInt check: an isinstance() against a protocol costs ~100x a type comparison
    if type(value) is int:
        return value
    if value is None:
        return 0
    if not isinstance(value, str | bytes | SupportsInt):
        return 0  # what int() raises TypeError for
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


_BREAKDOWNS = ("agents", "profiles", "hook_events", "providers")


def _read_breakdowns(data: Mapping[str, object]) -> dict[str, Any]:
    """The agent, profile, hook and provider counters of a metrics or day object."""
    out: dict[str, dict[str, Counter]] = {}
    for name in _BREAKDOWNS:
        value = data.get(name)
        out[name] = {str(k): Counter.from_json(v) for k, v in value.items()} if isinstance(value, Mapping) else {}
    return out


def _with_breakdowns(owner: object, out: JSONObject) -> JSONObject:
    """``out`` plus ``owner``'s non-empty agent, profile, hook and provider counters, by name."""
    for name in _BREAKDOWNS:
        counters: dict[str, Counter] = getattr(owner, name)
        if counters:
            out[name] = {key: counters[key].to_json() for key in sorted(counters)}
    return out


@value_dataclass(slots=True)
class DailyMetric:
    """One UTC day's counters and breakdowns."""

    counter: Counter = field(default_factory=Counter)
    agents: dict[str, Counter] = field(default_factory=dict)
    profiles: dict[str, Counter] = field(default_factory=dict)
    hook_events: dict[str, Counter] = field(default_factory=dict)
    providers: dict[str, Counter] = field(default_factory=dict)

    def to_json(self) -> JSONObject:
        return _with_breakdowns(self, {"counter": self.counter.to_json()})

    @classmethod
    def from_json(cls, data: object) -> DailyMetric:
        if not isinstance(data, Mapping):
            return cls()
        return cls(counter=Counter.from_json(data.get("counter")), **_read_breakdowns(data))


@value_dataclass(slots=True)
class Metrics:
    """The content of ``metrics.json``.

    Daily buckets are decoded lazily (:meth:`day`): a writer touches one day per event, and
    decoding all thirty on every hook call would dominate its cost.
    """

    version: int = METRICS_VERSION
    updated_at: datetime | None = None
    first_seen: datetime | None = None
    totals: Counter = field(default_factory=Counter)
    daily: dict[str, DailyMetric] = field(default_factory=dict)
    agents: dict[str, Counter] = field(default_factory=dict)
    profiles: dict[str, Counter] = field(default_factory=dict)
    hook_events: dict[str, Counter] = field(default_factory=dict)
    providers: dict[str, Counter] = field(default_factory=dict)
    raw_daily: dict[str, Any] = field(default_factory=dict, repr=False)

    def day(self, key: str, *, create: bool = False) -> DailyMetric | None:
        """The bucket of UTC date ``key`` (``YYYY-MM-DD``), decoding it on first access."""
        bucket = self.daily.get(key)
        if bucket is not None:
            return bucket
        raw = self.raw_daily.pop(key, None)
        if raw is None and not create:
            return None
        bucket = DailyMetric.from_json(raw)
        self.daily[key] = bucket
        return bucket

    def day_keys(self) -> list[str]:
        return sorted({*self.daily, *self.raw_daily})

    def to_json(self) -> JSONObject:
        out: JSONObject = {"version": self.version}
        out["updated_at"] = format_time(self.updated_at) if self.updated_at else ZERO_TIME
        if self.first_seen:
            out["first_seen"] = format_time(self.first_seen)
        out["totals"] = self.totals.to_json()
        keys = self.day_keys()
        if keys:
            out["daily"] = {k: self.daily[k].to_json() if k in self.daily else self.raw_daily[k] for k in keys}
        return _with_breakdowns(self, out)

    @classmethod
    def from_json(cls, data: object) -> Metrics:
        """Read a metrics document; raises ``ValueError`` when it is not a JSON object."""
        if not isinstance(data, Mapping):
            raise ValueError("metrics file is not a JSON object")
        daily = data.get("daily")
        return cls(
            version=as_int(data.get("version")) or METRICS_VERSION,
            updated_at=_time(data.get("updated_at")),
            first_seen=_time(data.get("first_seen")),
            totals=Counter.from_json(data.get("totals")),
            raw_daily={str(k): v for k, v in daily.items() if isinstance(v, Mapping)}
            if isinstance(daily, Mapping)
            else {},
            **_read_breakdowns(data),
        )

    def update_many(
        self, events: Iterable[Mapping[str, object]], retention_days: int, *, now: datetime | None = None
    ) -> None:
        """Count each (normalized) event into the totals, its day and its breakdowns, then prune once."""
        for event in events:
            self._count(event)
        self.prune(retention_days, now=now)

    def _count(self, event: Mapping[str, object]) -> None:
        """Add one event into the totals, its day, and the agent/profile/hook/provider breakdowns."""
        when = _time(event.get("time")) or utcnow()
        if self.first_seen is None:
            self.first_seen = when
        self.updated_at = when
        day = self.day(when.strftime("%Y-%m-%d"), create=True)
        assert day is not None
        delta = _event_delta(event)
        target = str(event.get("target") or "")
        # only passive (hook) traffic is attributed to an agent; CLI/MCP calls have no trusted target
        keys = (
            target if event.get("source") == "hook" and target.strip() else "",
            str(event.get("profile") or ""),
            f"{target}/{event.get('hook_event') or ''}".strip("/"),
        )
        for totals, *breakdowns in (
            (self.totals, self.agents, self.profiles, self.hook_events),
            (day.counter, day.agents, day.profiles, day.hook_events),
        ):
            _add_sparse(totals, delta)
            for counters, key in zip(breakdowns, keys, strict=True):
                if key:
                    _add_sparse(_counter_in(counters, key), delta)
        for name, sums in _provider_deltas(event).items():
            _add_sparse(_counter_in(self.providers, name), sums)
            _add_sparse(_counter_in(day.providers, name), sums)

    def prune(self, retention_days: int, *, now: datetime | None = None) -> None:
        """Drop daily buckets older than the retention window (and any with an unreadable date)."""
        if retention_days <= 0:
            return
        cutoff = (now or utcnow()).date() - timedelta(days=retention_days - 1)
        for key in self.day_keys():
            try:
                keep = date.fromisoformat(key) >= cutoff
            except ValueError:
                keep = False
            if not keep:
                self.daily.pop(key, None)
                self.raw_daily.pop(key, None)


def _time(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return parse_time(value)
        except ValueError:
            return None
    return None


#: a sparse counter: only the non-zero fields of a :class:`Counter` (the latency buckets as
#: a list under ``_BUCKETS``): one event's increments
_Sparse = dict[str, Any]


def _event_delta(event: Mapping[str, object]) -> _Sparse:
    """The counter increments one event adds to the totals and its breakdowns."""
    provider_errors = event.get("provider_errors")
    success = bool(event.get("success"))
    skipped = bool(event.get("skipped"))
    kind = event.get("kind")
    delta: _Sparse = {"events": 1, "successes" if success else "errors": 1}
    if skipped:
        delta["skipped"] = 1
    if event.get("recall_timed_out"):
        delta["recall_timeouts"] = 1
    for name, key in _EVENT_COUNTS:
        value = as_int(event.get(key))
        if value:
            delta[name] = value
    if as_int(event.get("flushed")) > 0:
        delta["flushes"] = 1
    if isinstance(provider_errors, list) and provider_errors:
        delta["provider_errors"] = len(provider_errors)
        if success:  # an event that succeeded overall still counts its provider errors
            delta["errors"] = len(provider_errors)
    if not skipped:
        if kind in ("recall", "hook_recall"):
            delta["recalls"] = 1
        elif kind in ("remember", "hook_write"):
            delta["writes"] = 1
        elif kind == "hook_delivery" and success:
            delta["writes"] = 1
            delta["provider_write_samples"] = 1
            for name, key in _DELIVERY_COUNTS:
                value = as_int(event.get(key))
                if value:
                    delta[name] = value
    return delta


#: (counter field, event field) of the counts an event carries as numbers
_EVENT_COUNTS = (
    ("duration_ms", "duration_ms"),
    ("hits", "hit_count"),
    ("inserted", "inserted_count"),
    ("items", "item_count"),
    ("refs", "ref_count"),
)
#: (counter field, event field) of the counts a delivered ``hook_delivery`` event adds
_DELIVERY_COUNTS = (
    ("provider_write_duration_ms", "provider_duration_ms"),
    ("passive_write_latency_total_ms", "passive_write_latency_total_ms"),
    ("passive_write_samples", "passive_write_samples"),
)
#: (event field, counter field) of the per-provider count maps
_PROVIDER_COUNTS = (
    ("provider_recalls", "recalls"),
    ("provider_writes", "writes"),
    ("provider_hits", "hits"),
    ("provider_refs", "refs"),
)


def _provider_deltas(event: Mapping[str, object]) -> dict[str, _Sparse]:
    """Per-provider increments: routed recalls/writes, hits, refs, errors, recall latency, deliveries."""
    deltas: dict[str, _Sparse] = {}

    def of(name: object) -> _Sparse:
        return deltas.setdefault(str(name or ""), {})

    def bump(delta: _Sparse, name: str, value: int) -> None:
        delta[name] = delta.get(name, 0) + value

    for key, attr in _PROVIDER_COUNTS:
        counts = event.get(key)
        if counts and isinstance(counts, Mapping):
            for name, count in counts.items():
                bump(of(name), attr, as_int(count))
    for err in _mappings(event.get("provider_errors")):
        delta = of(err.get("provider"))
        bump(delta, "provider_errors", 1)
        bump(delta, "errors", 1)
    for recall in _mappings(event.get("provider_recall_details")):
        delta = of(recall.get("provider"))
        duration = as_int(recall.get("duration_ms"))
        bump(delta, "provider_recall_samples", 1)
        bump(delta, "provider_recall_duration_ms", duration)
        bucket = next((i for i, bound in enumerate(LATENCY_BOUNDS_MS) if duration <= bound), len(LATENCY_BOUNDS_MS))
        delta.setdefault(_BUCKETS, [0] * (len(LATENCY_BOUNDS_MS) + 1))[bucket] += 1
        if recall.get("outcome") == "timeout":
            bump(delta, "provider_recall_timeouts", 1)
        if recall.get("bulkhead_busy"):
            bump(delta, "provider_recall_bulkhead_skips", 1)
    provider = str(event.get("provider") or "").strip()
    if provider and event.get("kind") == "hook_delivery" and event.get("success") and not event.get("skipped"):
        delta = of(provider)
        bump(delta, "provider_write_samples", 1)
        for name, key in _DELIVERY_COUNTS:
            bump(delta, name, as_int(event.get(key)))
    deltas.pop("", None)
    for delta in deltas.values():
        delta["events"] = 1
    return deltas


def _mappings(value: object) -> list[Mapping[str, object]]:
    """The objects of list field ``value`` (an event's per-provider details)."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _add_sparse(counter: Counter, delta: _Sparse) -> None:
    for name, value in delta.items():
        if name == _BUCKETS:
            _add_buckets(counter.provider_recall_latency_buckets, value)
        else:
            setattr(counter, name, getattr(counter, name) + value)


def _add_buckets(mine: list[int], theirs: list[int]) -> None:
    """Add latency histogram ``theirs`` into ``mine``, bucket by bucket (``mine`` grows to fit)."""
    mine.extend([0] * (len(theirs) - len(mine)))
    for i, count in enumerate(theirs):
        mine[i] += count


def provider_recall_p95_ms(counter: Counter) -> int:
    """p95 provider recall latency as the upper bound of its histogram bucket (0 without samples)."""
    samples = counter.provider_recall_samples
    if samples == 0 or not counter.provider_recall_latency_buckets:
        return 0
    target = (samples * 95 + 99) // 100
    seen = 0
    for i, count in enumerate(counter.provider_recall_latency_buckets):
        seen += count
        if seen >= target:
            return LATENCY_BOUNDS_MS[min(i, len(LATENCY_BOUNDS_MS) - 1)]
    return 0
