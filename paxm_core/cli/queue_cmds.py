"""``paxm queue``: inspect and operate the durable capture queue."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from paxm_core.api.errors import UsageError
from paxm_core.api.json import JSONObject, JSONValue
from paxm_core.cli.common import echo_json, json_flag, parse_seconds
from paxm_core.textsafe import printable

if TYPE_CHECKING:
    from paxm_core.capture.model import QueueStatus
    from paxm_core.config.model import Config

__all__ = ["queue"]


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _counts(counts: dict[str, int], states: tuple[str, ...]) -> str:
    return ", ".join(f"{state} {counts.get(state, 0)}" for state in states)


def _daemon_status(config: Config) -> JSONObject:
    """The hook daemon's own status: ``{"running": False}`` or its pid, uptime, requests...

    A daemon that holds its lock but did not answer in time is running (``"responding":
    False``): it is busy, starting or stopping, and it delivers the queue, not this process.
    """
    from paxm_core.passive.control import daemon_status

    try:
        value = daemon_status(config.path)
    except Exception as exc:  # a broken probe must not hide the queue status
        return {"running": False, "error": str(exc)}
    return {"running": False} if value is None else {"running": True, **dict(value)}


def _daemon_line(daemon: dict[str, Any]) -> str:
    if not daemon.get("running"):
        return "not running" + (f" ({daemon['error']})" if daemon.get("error") else "")
    parts = [f"pid {daemon.get('pid') or '?'}"]
    if daemon.get("responding") is False:
        parts.append(f"not answering: {daemon.get('error') or 'no answer'}")
    if isinstance(daemon.get("uptime_seconds"), (int, float)):
        parts.append(f"up {_age(daemon['uptime_seconds'])}")
    if daemon.get("requests") is not None:
        parts.append(f"{daemon['requests']} requests")
    return "running (" + ", ".join(parts) + ")"


@click.group()
def queue() -> None:
    """Inspect and operate the durable capture queue (passive hook writes)."""


@queue.command()
@json_flag("Print the status as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Counts by state, age of the oldest undelivered capture, and dead deliveries with their last error."""
    from paxm_core.capture import _spool, open_queue
    from paxm_core.capture.model import QueueStatus

    config: Config = ctx.find_root().obj.config()
    path = config.capture_queue_path
    if path.exists():
        with open_queue(config, recover=False) as q:
            report: dict[str, Any] = q.status().to_json()
    else:
        empty = QueueStatus(str(path), 0, {}, {}, {}, None, [], [], [], spooled=_spool.pending_count(path))
        report = {"path": str(path), "exists": False, **empty.to_json()}
    report["daemon"] = _daemon_status(config)
    if as_json:
        echo_json(report)
        return
    _print_status(report)


def _print_status(report: dict[str, Any]) -> None:
    """``queue status``'s text form of ``report`` (its JSON form)."""
    click.echo(f"Capture queue: {report['path']}" + ("" if report.get("exists", True) else " (not created yet)"))
    click.echo(f"Open events: {report['open_events']}")
    click.echo(f"Episodes: {_counts(report['episodes'], ('pending', 'delivered', 'dead'))}")
    click.echo(f"Deliveries: {_counts(report['deliveries'], ('pending', 'delivering', 'retry', 'delivered', 'dead'))}")
    for name, counts in sorted(report["providers"].items()):
        click.echo(f"  {name}: " + ", ".join(f"{state} {n}" for state, n in sorted(counts.items())))
    click.echo(f"Inbox: {_counts(report['inbox'], ('pending', 'failed'))}")
    if report["spooled"]:
        # stored beside the queue file while another process held its write lock
        click.echo(f"Spooled: {report['spooled']} event(s) wait to be imported (the queue file was locked)")
    click.echo(f"Oldest pending: {_age(report['oldest_pending_age_seconds'])}")
    truncated = report["truncated"]
    if truncated["events"]:
        click.echo(
            f"Truncated: {truncated['events']} oversized event(s) stored cut to limits.max_text_bytes"
            f" (last {truncated['last_at']})"
        )
    # errors may quote a provider's answer or a payload: never raw control characters
    for key, title, line in (
        ("dead_deliveries", "Dead deliveries", "  {episode_id} -> {provider} ({attempts} attempts): {last_error}"),
        ("dead_episodes", "Dead episodes", "  {episode_id}: {error}"),
        ("failed_inbox", "Failed inbox entries", "  {event_id}: {error}"),
    ):
        if report[key]:
            click.echo(f"{title}:")
            for row in report[key]:
                click.echo(printable(line.format(**row)))
    click.echo(f"Hook daemon: {_daemon_line(report['daemon'])}")


@queue.command()
@click.option("--dead", "dead", is_flag=True, help="Revive dead deliveries with a fresh set of attempts.")
@click.pass_context
def retry(ctx: click.Context, dead: bool) -> None:
    """Revive dead deliveries (--dead) with a fresh set of attempts."""
    from paxm_core.capture import open_queue

    if not dead:
        raise UsageError("queue retry needs --dead (waiting retries run on their own; use 'paxm queue flush')")
    config: Config = ctx.find_root().obj.config()
    count = 0
    if config.capture_queue_path.exists():
        with open_queue(config, recover=False, routes=True) as q:
            count = q.retry_dead()
    click.echo(f"Revived {count} dead deliver{'y' if count == 1 else 'ies'}.")


@queue.command()
@click.option(
    "--timeout",
    "timeout",
    default="35s",
    show_default=True,
    metavar="D",
    help="How long to wait for deliveries (Go duration, e.g. 10s, 2m).",
)
@click.option(
    "--seal-open",
    is_flag=True,
    help="Also seal turns still in progress (incomplete) instead of leaving them for their turn end.",
)
@json_flag("Print the report as JSON.")
@click.pass_context
def flush(ctx: click.Context, timeout: str, seal_open: bool, as_json: bool) -> None:
    """Deliver every sealed turn, wait, and report (exit 1 if anything is left).

    A turn still in progress is left whole, so its prompt and answer become one memory; it is
    sealed at its turn end, after capture_queue.max_episode_age, or with --seal-open.
    """
    from paxm_core.capture import DeliveryWorker, open_queue
    from paxm_core.passive.control import send_control
    from paxm_core.progress import progress
    from paxm_core.telemetry import Telemetry

    seconds = parse_seconds(timeout, "queue flush --timeout", positive=True)
    config: Config = ctx.find_root().obj.config()
    if _daemon_status(config).get("running"):
        # The daemon drains its inbox and delivers; a second worker here would only race it.
        # A busy daemon (it did not answer the status probe in time) still runs: ask it anyway
        # and wait for its answer (a daemon still starting gets the whole --timeout to come
        # up); if none comes in time, that is an error, never a reason to deliver here.
        params: JSONObject = {"timeout": seconds, **({"seal_open": True} if seal_open else {})}
        response = send_control(config.path, "flush", timeout=seconds + 5, params=params, starting_wait=seconds)
        if response is not None:
            with open_queue(config, recover=False) as q:
                state = q.status()
            _report_flush(response.get("flush") or {}, state, as_json, via_daemon=True, seal_open=seal_open)
            return
        # None: the daemon exited (and released its lock) since the probe: deliver here
    from paxm_core.passive.processor import HookProcessor

    runtime = ctx.find_root().obj.runtime()
    config = runtime.config
    telemetry = Telemetry(config)
    with open_queue(config, recover=True, routes=True) as q:
        if q.status(dead_limit=0).inbox.get("pending") or q.spool_pending():
            HookProcessor(runtime, q).drain_inbox()  # raw hook payloads the stdlib client stored, no daemon running
        worker = DeliveryWorker(q, runtime.router, config.capture_queue, config.write_profiles, telemetry=telemetry)
        with progress("flush", show=not as_json) as bar:
            report = worker.flush(seconds, seal_open=seal_open, on_progress=bar.update)
        state = q.status()
    _report_flush(report.to_json(), state, as_json, via_daemon=False, seal_open=seal_open)


def _report_flush(
    report: Mapping[str, JSONValue], state: QueueStatus, as_json: bool, *, via_daemon: bool, seal_open: bool
) -> None:
    data = dict(report)
    # events of turns still in progress are not owed yet: their turn end seals them
    live = 0 if seal_open else state.open_events
    remaining = state.undelivered - live
    dead_total = state.deliveries.get("dead", 0) + len(state.dead_episodes)
    failed_inbox = state.inbox.get("failed", 0)
    ok = remaining == 0 and dead_total == 0 and failed_inbox == 0 and not data.get("timed_out")
    data.update(
        ok=ok,
        remaining=remaining,
        dead_total=dead_total,
        inbox_pending=state.inbox.get("pending", 0),
        inbox_failed=failed_inbox,
        spooled=state.spooled,
        via_daemon=via_daemon,
        live=live,
    )
    if as_json:
        echo_json(data, ascii=True)
    else:
        click.echo(
            f"Flushed capture queue{' (via the hook daemon)' if via_daemon else ''}:"
            f" sealed {data.get('sealed', 0)} episode(s), delivered {data.get('delivered', 0)},"
            f" failed {data.get('failed', 0)}, dead {data.get('dead', 0)}; {remaining} still owed"
            + (" (timed out)" if data.get("timed_out") else "")
        )
        if live:
            click.echo(f"{live} event(s) of turns in progress left whole (sealed at their turn end)")
        if dead_total:
            click.echo(f"{dead_total} dead; see 'paxm queue status', revive with 'paxm queue retry --dead'")
        if data.get("spooled"):
            click.echo(f"{data['spooled']} spooled hook event(s) wait for the queue file's lock")
        if data["inbox_pending"]:
            click.echo(f"{data['inbox_pending']} raw hook event(s) wait in the inbox for the hook daemon")
        if failed_inbox:
            click.echo(f"{failed_inbox} raw hook event(s) could not be processed; see 'paxm queue status'")
    if not ok:
        # not ctx.exit(1): paxm's main() runs click with standalone_mode=False, which turns
        # click's Exit into a return value that main() does not propagate.
        sys.exit(1)
