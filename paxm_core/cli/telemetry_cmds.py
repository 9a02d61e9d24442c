"""``paxm history`` and ``paxm logs``: what paxm did, from the local telemetry files."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from paxm_core.api.errors import UsageError
from paxm_core.cli.common import echo_json, json_flag
from paxm_core.textsafe import printable

if TYPE_CHECKING:
    from paxm_core.telemetry import Telemetry

__all__ = ["history", "impact", "logs"]


def _telemetry(ctx: click.Context) -> Telemetry:
    from paxm_core.telemetry import Telemetry

    return Telemetry(ctx.find_root().obj.config())


@click.command()
@click.option("--days", type=int, default=7, show_default=True, help="Days to summarize (0 or less: whole retention).")
@json_flag("Print the HistorySummary (or the receipts) as JSON.")
@click.option(
    "--injections", is_flag=True, help="Show the receipts of recent passive injections: why each memory was injected."
)
@click.option("--limit", type=int, default=20, show_default=True, help="Receipts to show with --injections.")
@click.pass_context
def history(ctx: click.Context, days: int, as_json: bool, injections: bool, limit: int) -> None:
    """Summarize recent recalls, writes, hooks and deliveries by day, profile, agent and provider."""
    from paxm_core.telemetry.render import render_history

    if injections:
        from paxm_core.telemetry.receipts import injection_events, render_injections

        if limit < 0:
            raise UsageError("history --limit must be non-negative")
        events = injection_events(_telemetry(ctx), limit)
        if as_json:
            echo_json({"injections": events})
        else:
            click.echo(printable(render_injections(events)), nl=False)
        return
    summary = _telemetry(ctx).history(days)
    if as_json:
        echo_json(summary.to_json())
    else:
        click.echo(printable(render_history(summary)), nl=False)


@click.command()
@click.option("--tail", type=int, default=50, show_default=True, help="Number of recent events to show.")
@click.option("--follow", is_flag=True, help="Keep printing new events (follows log rotation; Ctrl-C stops).")
@json_flag("Print raw events as JSON lines.")
@click.pass_context
def logs(ctx: click.Context, tail: int, follow: bool, as_json: bool) -> None:
    """Show recent telemetry events, oldest first."""
    from paxm_core.telemetry.render import format_log_line

    if tail < 0:
        raise UsageError("logs --tail must be non-negative")
    telemetry = _telemetry(ctx)

    def emit(event: dict[str, Any]) -> None:
        if as_json:
            click.echo(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
        else:
            click.echo(printable(format_log_line(event)))  # event fields may come from hook payloads

    if not follow:
        for event in telemetry.tail(tail):
            emit(event)
        return
    try:
        telemetry.follow(tail, emit)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how --follow ends


@click.command()
@click.option("--days", type=int, default=30, show_default=True, help="Sessions last active in this many days.")
@json_flag("Print the comparison as JSON.")
@click.pass_context
def impact(ctx: click.Context, days: int, as_json: bool) -> None:
    """Compare sessions with passive memory against held-back ones (needs passive.holdback)."""
    from datetime import timedelta

    from paxm_core.api.timefmt import utcnow
    from paxm_core.telemetry.impact import compare
    from paxm_core.telemetry.sessions import SessionStats

    if days <= 0:
        raise UsageError("impact --days must be positive")
    telemetry = _telemetry(ctx)
    rows = SessionStats(telemetry.settings.dir).rows(utcnow() - timedelta(days=days))
    report = compare(rows, days)
    if as_json:
        echo_json(report.to_json())
        return
    lines = [
        "== paxm impact ==",
        f"window: sessions active in the last {days} days",
        f"sessions: {report.with_memory} with memory, {report.holdback} held back, "
        f"{report.outside} outside the comparison (no holdback arm)",
        "",
    ]
    for signal in report.signals:
        row = f"{signal.label}: {signal.memory_mean:.2f} with memory, {signal.holdback_mean:.2f} held back"
        if signal.low is not None and signal.high is not None:
            row += f"; difference {signal.difference:+.2f} (95% CI {signal.low:+.2f} to {signal.high:+.2f}): "
            row += signal.verdict
        lines.append(row)
    lines += ["", report.statement]
    click.echo(printable("\n".join(lines)))
