"""``paxm history`` and ``paxm logs``: what paxm did, from the local telemetry files."""

from __future__ import annotations

import json
from typing import Any

import click

from paxm_core.api.errors import UsageError
from paxm_core.textsafe import printable

__all__ = ["history", "logs"]


def _telemetry(ctx: click.Context) -> Any:
    from paxm_core.config import load_config
    from paxm_core.plugins import installed_provider_catalog
    from paxm_core.telemetry import Telemetry

    config_path = getattr(ctx.find_root().obj, "config_path", None)
    return Telemetry(load_config(config_path, provider_types=installed_provider_catalog()))


@click.command()
@click.option("--days", type=int, default=7, show_default=True, help="Days to summarize (0 or less: whole retention).")
@click.option("--json", "as_json", is_flag=True, help="Print the HistorySummary as JSON.")
@click.pass_context
def history(ctx: click.Context, days: int, as_json: bool) -> None:
    """Summarize recent recalls, writes, hooks and deliveries by day, profile, agent and provider."""
    from paxm_core.telemetry.render import render_history

    summary = _telemetry(ctx).history(days)
    if as_json:
        click.echo(json.dumps(summary.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo(printable(render_history(summary)), nl=False)


@click.command()
@click.option("--tail", type=int, default=50, show_default=True, help="Number of recent events to show.")
@click.option("--follow", is_flag=True, help="Keep printing new events (follows log rotation; Ctrl-C stops).")
@click.option("--json", "as_json", is_flag=True, help="Print raw events as JSON lines.")
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
