"""The history summary (``paxm history``, MCP ``paxm_history``, the dashboard's ``/api/summary``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from paxm_core.api.json import JSONObject
from paxm_core.api.timefmt import ZERO_TIME, format_time, utcnow
from paxm_core.telemetry.metrics import Counter, Metrics

__all__ = ["HistorySummary", "summarize"]


@dataclass(slots=True)
class HistorySummary:
    """Counters summed over the last ``days`` UTC days, with sorted breakdowns and storage facts."""

    days: int
    since: datetime | None = None
    until: datetime | None = None
    totals: Counter = field(default_factory=Counter)
    daily: list[tuple[str, Counter]] = field(default_factory=list)
    agents: list[tuple[str, Counter]] = field(default_factory=list)
    profiles: list[tuple[str, Counter]] = field(default_factory=list)
    hook_events: list[tuple[str, Counter]] = field(default_factory=list)
    providers: list[tuple[str, Counter]] = field(default_factory=list)
    storage: dict[str, str | int] = field(default_factory=dict)

    def to_json(self) -> JSONObject:
        """Upstream's HistorySummary JSON shape."""
        out: JSONObject = {
            "days": self.days,
            "since": format_time(self.since) if self.since else ZERO_TIME,
            "until": format_time(self.until) if self.until else ZERO_TIME,
            "totals": self.totals.to_json(),
        }
        if self.daily:
            out["daily"] = [{"date": d, "counter": c.to_json()} for d, c in self.daily]
        for name in ("agents", "profiles", "hook_events", "providers"):
            rows: list[tuple[str, Counter]] = getattr(self, name)
            if rows:
                out[name] = [{"name": n, "counter": c.to_json()} for n, c in rows]
        out["storage"] = dict(self.storage)
        return out


def summarize(
    metrics: Metrics, days: int, storage: dict[str, str | int], *, now: datetime | None = None
) -> HistorySummary:
    """Sum the daily buckets of the window ``[today - days + 1, today]`` (UTC)."""
    until = now or utcnow()
    today = datetime(until.year, until.month, until.day, tzinfo=until.tzinfo)
    try:
        start = today - timedelta(days=days - 1)
    except OverflowError:  # a window reaching before year 1 simply covers everything
        start = datetime(1, 1, 1, tzinfo=until.tzinfo)
    summary = HistorySummary(days=days, since=start, until=until, storage=storage)
    groups: dict[str, dict[str, Counter]] = {"agents": {}, "profiles": {}, "hook_events": {}, "providers": {}}
    first, last = start.date().isoformat(), today.date().isoformat()
    # Walk the stored buckets, not every date of the window: days=10**9 must not spin.
    for key in metrics.day_keys():
        if not first <= key <= last:
            continue
        day = metrics.day(key)
        if day is None:
            continue
        summary.totals.add(day.counter)
        summary.daily.append((key, day.counter))
        for name, target in groups.items():
            for item, counter in getattr(day, name).items():
                target.setdefault(item, Counter()).add(counter)
    for name, target in groups.items():
        setattr(summary, name, sorted(target.items()))
    return summary
