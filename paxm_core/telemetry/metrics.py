"""Aggregated counters: the metrics file and the history summary built from it.

``metrics.json`` keeps running totals plus one bucket per UTC day (pruned to the retention
window), each broken down by agent, profile, hook event and provider.  JSON names match
upstream's, so a metrics file written by either implementation can be read by the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field, fields
from datetime import date, datetime, timedelta
from typing import Any

from paxm_core.dataclass_support import value_dataclass
from paxm_core.timefmt import format_time, parse_time, utcnow

__all__ = [
    "LATENCY_BOUNDS_MS",
    "METRICS_VERSION",
    "Counter",
    "DailyMetric",
    "Metrics",
    "counter_for_event",
    "provider_counters_for_event",
    "provider_recall_p95_ms",
]

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
        """Add ``other`` into this counter in place."""
        for name in _SCALARS:
            theirs = getattr(other, name)
            if theirs:
                setattr(self, name, getattr(self, name) + theirs)
        theirs_buckets = other.provider_recall_latency_buckets
        if theirs_buckets:
            mine = self.provider_recall_latency_buckets
            mine.extend([0] * (len(theirs_buckets) - len(mine)))
            for i, count in enumerate(theirs_buckets):
                mine[i] += count

    def copy(self) -> Counter:
        """A deep copy."""
        clone = Counter()
        clone.add(self)
        return clone

    def to_json(self) -> dict[str, Any]:
        """``events`` always, the rest only when non-zero (upstream's ``omitempty``)."""
        out: dict[str, Any] = {"events": self.events}
        for name in _FIELD_NAMES[1:]:
            value = getattr(self, name)
            if value:
                out[name] = list(value) if name == _BUCKETS else value
        return out

    @classmethod
    def from_json(cls, data: Any) -> Counter:
        """Read a counter, ignoring unknown keys and values of the wrong type."""
        counter = cls()
        if not isinstance(data, Mapping):
            return counter
        for name, value in data.items():
            if name in _SCALAR_SET:
                setattr(counter, name, value if type(value) is int else _int(value))
            elif name == _BUCKETS and isinstance(value, list):
                counter.provider_recall_latency_buckets = [_int(v) for v in value]
        return counter


_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Counter))
_BUCKETS = "provider_recall_latency_buckets"
_SCALARS: tuple[str, ...] = tuple(name for name in _FIELD_NAMES if name != _BUCKETS)
_SCALAR_SET = frozenset(_SCALARS)


_new_object = object.__new__


def _zero() -> Counter:
    """``Counter()`` without the generic keyword ``__init__``: every counted event builds
    several, and that ``__init__`` was most of a delivery outcome's telemetry cost."""
    counter: Counter = _new_object(Counter)
    for name in _SCALARS:
        setattr(counter, name, 0)
    counter.provider_recall_latency_buckets = []
    return counter


def _counter_in(counters: dict[str, Counter], name: str) -> Counter:
    counter = counters.get(name)
    if counter is None:
        counter = counters[name] = _zero()
    return counter


def _int(value: Any) -> int:
    if type(value) is int:
        return value
    if value is None:  # most counted fields are absent from most events: no exception for them
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _counter_map(data: Any) -> dict[str, Counter]:
    if not isinstance(data, Mapping):
        return {}
    return {str(k): Counter.from_json(v) for k, v in data.items()}


def _counter_map_json(counters: Mapping[str, Counter]) -> dict[str, Any]:
    return {name: counters[name].to_json() for name in sorted(counters)}


@value_dataclass(slots=True)
class DailyMetric:
    """One UTC day's counters and breakdowns."""

    counter: Counter = field(default_factory=Counter)
    agents: dict[str, Counter] = field(default_factory=dict)
    profiles: dict[str, Counter] = field(default_factory=dict)
    hook_events: dict[str, Counter] = field(default_factory=dict)
    providers: dict[str, Counter] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"counter": self.counter.to_json()}
        for name in ("agents", "profiles", "hook_events", "providers"):
            value: dict[str, Counter] = getattr(self, name)
            if value:
                out[name] = _counter_map_json(value)
        return out

    @classmethod
    def from_json(cls, data: Any) -> DailyMetric:
        if not isinstance(data, Mapping):
            return cls()
        return cls(
            counter=Counter.from_json(data.get("counter")),
            agents=_counter_map(data.get("agents")),
            profiles=_counter_map(data.get("profiles")),
            hook_events=_counter_map(data.get("hook_events")),
            providers=_counter_map(data.get("providers")),
        )


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
        """All bucket dates, sorted."""
        return sorted({*self.daily, *self.raw_daily})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.version}
        out["updated_at"] = format_time(self.updated_at) if self.updated_at else "0001-01-01T00:00:00Z"
        if self.first_seen:
            out["first_seen"] = format_time(self.first_seen)
        out["totals"] = self.totals.to_json()
        keys = self.day_keys()
        if keys:
            out["daily"] = {k: self.daily[k].to_json() if k in self.daily else self.raw_daily[k] for k in keys}
        for name in ("agents", "profiles", "hook_events", "providers"):
            value: dict[str, Counter] = getattr(self, name)
            if value:
                out[name] = _counter_map_json(value)
        return out

    @classmethod
    def from_json(cls, data: Any) -> Metrics:
        """Read a metrics document; raises ``ValueError`` when it is not a JSON object."""
        if not isinstance(data, Mapping):
            raise ValueError("metrics file is not a JSON object")
        daily = data.get("daily")
        return cls(
            version=_int(data.get("version")) or METRICS_VERSION,
            updated_at=_time(data.get("updated_at")),
            first_seen=_time(data.get("first_seen")),
            totals=Counter.from_json(data.get("totals")),
            raw_daily={str(k): v for k, v in daily.items() if isinstance(v, Mapping)}
            if isinstance(daily, Mapping)
            else {},
            agents=_counter_map(data.get("agents")),
            profiles=_counter_map(data.get("profiles")),
            hook_events=_counter_map(data.get("hook_events")),
            providers=_counter_map(data.get("providers")),
        )

    def update(self, event: Mapping[str, Any], retention_days: int, *, now: datetime | None = None) -> None:
        """Count one (normalized) event into the totals, its day and its breakdowns, then prune."""
        self._count(event)
        self.prune(retention_days, now=now)

    def update_many(
        self, events: Iterable[Mapping[str, Any]], retention_days: int, *, now: datetime | None = None
    ) -> None:
        """:meth:`update` for each event in turn, pruning once at the end (the same result:
        a pruned day only ever loses buckets, and the cutoff does not depend on the events)."""
        for event in events:
            self._count(event)
        self.prune(retention_days, now=now)

    def _count(self, event: Mapping[str, Any]) -> None:
        when = _time(event.get("time")) or utcnow()
        self.version = self.version or METRICS_VERSION
        if self.first_seen is None:
            self.first_seen = when
        self.updated_at = when
        delta = counter_for_event(event)
        per_provider = provider_counters_for_event(event)
        day = self.day(when.strftime("%Y-%m-%d"), create=True)
        assert day is not None
        for totals, agents, profiles, hooks, providers in (
            (self.totals, self.agents, self.profiles, self.hook_events, self.providers),
            (day.counter, day.agents, day.profiles, day.hook_events, day.providers),
        ):
            totals.add(delta)
            if _aggregates_agent(event):
                _counter_in(agents, str(event["target"])).add(delta)
            if event.get("profile"):
                _counter_in(profiles, str(event["profile"])).add(delta)
            hook_key = f"{event.get('target') or ''}/{event.get('hook_event') or ''}".strip("/")
            if hook_key:
                _counter_in(hooks, hook_key).add(delta)
            for name, counter in per_provider.items():
                _counter_in(providers, name).add(counter)

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


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return parse_time(value)
        except ValueError:
            return None
    return None


def _aggregates_agent(event: Mapping[str, Any]) -> bool:
    # Only passive (hook) traffic is attributed to an agent; CLI/MCP calls have no trusted target.
    return event.get("source") == "hook" and bool(str(event.get("target") or "").strip())


def counter_for_event(event: Mapping[str, Any]) -> Counter:
    """The counter increments one event contributes to totals and breakdowns."""
    provider_errors = event.get("provider_errors") or []
    success = bool(event.get("success"))
    skipped = bool(event.get("skipped"))
    kind = event.get("kind")
    counter = _zero()
    counter.events = 1
    counter.successes = 1 if success else 0
    counter.errors = 0 if success else 1
    counter.skipped = 1 if skipped else 0
    counter.recall_timeouts = 1 if event.get("recall_timed_out") else 0
    counter.duration_ms = _int(event.get("duration_ms"))
    counter.hits = _int(event.get("hit_count"))
    counter.inserted = _int(event.get("inserted_count"))
    counter.items = _int(event.get("item_count"))
    counter.refs = _int(event.get("ref_count"))
    counter.flushes = 1 if _int(event.get("flushed")) > 0 else 0
    counter.provider_errors = len(provider_errors)
    if kind in ("recall", "hook_recall") and not skipped:
        counter.recalls = 1
    elif kind in ("remember", "hook_write") and not skipped:
        counter.writes = 1
    elif kind == "hook_delivery" and success and not skipped:
        counter.writes = 1
        counter.provider_write_samples = 1
        counter.provider_write_duration_ms = _int(event.get("provider_duration_ms"))
        counter.passive_write_latency_total_ms = _int(event.get("passive_write_latency_total_ms"))
        counter.passive_write_samples = _int(event.get("passive_write_samples"))
    if provider_errors and counter.errors == 0:
        counter.errors = len(provider_errors)
    return counter


def provider_counters_for_event(event: Mapping[str, Any]) -> dict[str, Counter]:
    """Per-provider increments: routed recalls/writes, hits, refs, errors, recall latency, deliveries."""
    counters: dict[str, Counter] = {}

    def of(name: Any) -> Counter:
        return _counter_in(counters, str(name or ""))

    for key, attr in (
        ("provider_recalls", "recalls"),
        ("provider_writes", "writes"),
        ("provider_hits", "hits"),
        ("provider_refs", "refs"),
    ):
        for name, count in (event.get(key) or {}).items():
            counter = of(name)
            setattr(counter, attr, getattr(counter, attr) + _int(count))
    for err in event.get("provider_errors") or []:
        counter = of(err.get("provider"))
        counter.provider_errors += 1
        counter.errors += 1
    for recall in event.get("provider_recall_details") or []:
        counter = of(recall.get("provider"))
        duration = _int(recall.get("duration_ms"))
        counter.provider_recall_samples += 1
        counter.provider_recall_duration_ms += duration
        _observe_latency(counter, duration)
        if recall.get("outcome") == "timeout":
            counter.provider_recall_timeouts += 1
        if recall.get("bulkhead_busy"):
            counter.provider_recall_bulkhead_skips += 1
    provider = str(event.get("provider") or "").strip()
    if event.get("kind") == "hook_delivery" and event.get("success") and not event.get("skipped") and provider:
        counter = of(provider)
        counter.provider_write_samples += 1
        counter.provider_write_duration_ms += _int(event.get("provider_duration_ms"))
        counter.passive_write_latency_total_ms += _int(event.get("passive_write_latency_total_ms"))
        counter.passive_write_samples += _int(event.get("passive_write_samples"))
    counters.pop("", None)
    for counter in counters.values():
        counter.events = 1
    return counters


def _observe_latency(counter: Counter, duration_ms: int) -> None:
    buckets = counter.provider_recall_latency_buckets
    if len(buckets) != len(LATENCY_BOUNDS_MS) + 1:
        buckets[:] = [0] * (len(LATENCY_BOUNDS_MS) + 1)
    index = next((i for i, bound in enumerate(LATENCY_BOUNDS_MS) if duration_ms <= bound), len(LATENCY_BOUNDS_MS))
    buckets[index] += 1


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
