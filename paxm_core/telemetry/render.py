"""Text rendering of history summaries and log events (``paxm history`` / ``paxm logs``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from paxm_core.api.timefmt import ZERO_TIME, parse_time
from paxm_core.telemetry.history import HistorySummary
from paxm_core.telemetry.metrics import Counter, as_int

__all__ = ["format_log_line", "history_status", "render_history"]


def history_status(totals: Counter) -> str:
    """``quiet`` (no events), ``attention`` (errors), ``partial`` (skips) or ``ok``."""
    if totals.events == 0:
        return "quiet"
    if totals.errors or totals.provider_errors:
        return "attention"
    if totals.skipped:
        return "partial"
    return "ok"


def _pct(numerator: int, denominator: int) -> str:
    return "n/a" if denominator == 0 else f"{numerator * 100 / denominator:.1f}%"


def _avg_ms(total: int, samples: int) -> str:
    return "n/a" if samples == 0 else f"{total / samples:.1f}ms"


def _table(out: list[str], title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    if not rows:
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    out.append("")
    out.append(title)

    def line(cells: Sequence[str]) -> str:
        # First column left-aligned, numbers right-aligned: easy to scan down.
        return "".join(
            f"  {c:<{w}}" if i == 0 else f"  {c:>{w}}" for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    out.append(line(headers))
    out.append(line(["-" * w for w in widths]))
    out.extend(line(r) for r in rows)


def render_history(summary: HistorySummary) -> str:
    """The human-readable history report."""
    t = summary.totals
    out = ["== paxm history ==", f"window: last {summary.days} days"]
    storage = summary.storage
    if t.events == 0:
        out += ["status: quiet", "", "no telemetry events recorded yet"]
        _table(
            out,
            "storage",
            ["file", "path"],
            [["events", str(storage.get("events_file", ""))], ["metrics", str(storage.get("metrics_file", ""))]],
        )
        return "\n".join(out) + "\n"
    out.append(f"status: {history_status(t)}")
    _totals_tables(out, summary)
    _breakdown_tables(out, summary)
    return "\n".join(out) + "\n"


def _totals_tables(out: list[str], summary: HistorySummary) -> None:
    """Overview, recall funnel, write pipeline and storage: one row each."""
    t = summary.totals
    _table(
        out,
        "overview",
        ["metric", "value"],
        [
            [name, str(getattr(t, name))]
            for name in ("events", "successes", "errors", "skipped", "provider_errors", "recall_timeouts")
        ],
    )
    _table(
        out,
        "recall funnel",
        ["recalls", "hits", "inserted", "insert_rate"],
        [[str(t.recalls), str(t.hits), str(t.inserted), _pct(t.inserted, t.hits)]],
    )
    provider_writes = sum(c.writes for _, c in summary.providers)
    provider_refs = sum(c.refs for _, c in summary.providers)
    pipeline = (t.writes, t.items, provider_writes, provider_refs, t.flushes)
    _table(
        out,
        "write pipeline",
        ["write_events", "items", "provider_writes", "provider_refs", "flushes", "provider_ref_rate"],
        [[*map(str, pipeline), _pct(provider_refs, provider_writes)]],
    )
    sizes = ("event_bytes", "total_bytes", "max_event_file_bytes", "max_event_files")
    _table(
        out,
        "storage",
        ["events_bytes", "total_bytes", "max_bytes", "files"],
        [[str(summary.storage.get(key, 0)) for key in sizes]],
    )


def _breakdown_tables(out: list[str], summary: HistorySummary) -> None:
    """The counters by day, profile, agent, hook and provider."""

    def named(*names: str) -> Callable[[Counter], list[object]]:
        return lambda c: [getattr(c, name) for name in names]

    operations = ("recalls", "hits", "inserted", "writes", "errors")
    passive = ("recalls", "writes", "inserted", "flushes", "errors")
    providers = ("provider", "recalls", "hits", "writes", "refs", "avg_write", "avg_passive_latency", "provider_errors")
    for title, headers, rows, cells in (
        ("by day", ("date", *operations), summary.daily, named(*operations)),
        ("by profile", ("profile", *operations), summary.profiles, named(*operations)),
        ("by agent", ("agent", "passive_recalls", "passive_writes", *passive[2:]), summary.agents, named(*passive)),
        (
            "by hook",
            ("hook", "recalls", "inserted", "writes", "flushes", "errors"),
            summary.hook_events,
            named("recalls", "inserted", "writes", "flushes", "errors"),
        ),
        (
            "by provider",
            providers,
            summary.providers,
            lambda c: [
                c.recalls,
                c.hits,
                c.writes,
                c.refs,
                _avg_ms(c.provider_write_duration_ms, c.provider_write_samples),
                _avg_ms(c.passive_write_latency_total_ms, c.passive_write_samples),
                c.provider_errors,
            ],
        ),
    ):
        _table(out, title, headers, [[key, *(str(v) for v in cells(c))] for key, c in rows])


_TEXT_FIELDS = ("command", "source", "target", "hook_event", "profile", "episode_id", "session_key", "provider")
_COUNT_FIELDS = (
    ("hits", "hit_count"),
    ("inserted", "inserted_count"),
    ("items", "item_count"),
    ("refs", "ref_count"),
    ("flushed", "flushed"),
)
_MS_FIELDS = ("duration_ms", "provider_duration_ms", "passive_write_latency_total_ms")


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _log_value(value: str) -> str:
    return _quote(value) if any(ch in value for ch in ' \t\r\n"') else value


def format_log_line(event: Mapping[str, object]) -> str:
    """``<RFC3339> OK|SKIP|ERROR <kind> key=value…`` (upstream's ``paxm logs`` line)."""
    status = "SKIP" if event.get("skipped") else ("OK" if event.get("success") else "ERROR")
    try:
        when = parse_time(str(event.get("time") or ""))
    except ValueError:
        when = None
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ") if when else ZERO_TIME
    parts = [stamp, status, _log_value(str(event.get("kind") or "event").strip() or "event")]
    for name in _TEXT_FIELDS:
        value = str(event.get(name) or "")
        if value.strip():
            parts.append(f"{name}={_log_value(value)}")
    for label, name in _COUNT_FIELDS:
        count = as_int(event.get(name))
        if count > 0:
            parts.append(f"{label}={count}")
    errors = event.get("provider_errors")
    if isinstance(errors, list) and errors:
        parts.append(f"provider_errors={len(errors)}")
    for name in _MS_FIELDS:
        ms = as_int(event.get(name))
        if ms > 0:
            parts.append(f"{name}={ms}")
    if event.get("error"):
        parts.append(f"error={_quote(str(event['error']))}")
    return " ".join(parts)
