"""``paxm backfill``: turn past agent sessions into memory (scan, run, status)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from paxm_core.api.errors import UsageError
from paxm_core.cli.common import echo_json, json_flag

if TYPE_CHECKING:
    from paxm_core.backfill.runner import Progress, RunReport
    from paxm_core.cli import CliState
    from paxm_core.plugins import PaxmPluginManager

__all__ = ["backfill"]


def _when(text: str | None, what: str) -> float | None:
    """``2026-01-31``, an ISO time, or a relative age (``30d``, ``12h``) -> epoch seconds."""
    if not text:
        return None
    value = text.strip()
    units = {"d": 86400.0, "h": 3600.0, "w": 7 * 86400.0}
    if value[:-1].isdigit() and value[-1:] in units:
        return time.time() - int(value[:-1]) * units[value[-1]]
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"invalid {what} {text!r}: use a date (2026-01-31), an ISO time or an age (30d, 12h)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()  # a bare date is local midnight
    return parsed.timestamp()


def _stamp(epoch: float | None) -> str:
    if not epoch:
        return "-"
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _plugin_manager() -> PaxmPluginManager:
    from paxm_core.plugins import get_plugin_manager

    return get_plugin_manager()


_AGENT = click.option("--agent", "agent", required=True, metavar="NAME", help="Harness to read: codex, claude, ...")
_AFTER = click.option(
    "--after", metavar="WHEN", help="Only turns at or after this date/time/age (e.g. 2026-01-01, 90d)."
)
_BEFORE = click.option(
    "--before", metavar="WHEN", help="Only turns before this date/time/age (default: 2 minutes ago)."
)
_JSON = json_flag("Machine-readable output (no progress bar).")


@click.group()
def backfill() -> None:
    """Turn past agent sessions stored on disk into memory.

    Every past turn goes through the capture pipeline live hooks use (same templates, echo
    stripping, no reasoning, recalled context never stored) with a stable id, so re-running
    or overlapping live capture stores nothing twice.  A run can be killed at any point and
    resumes where it stopped.  See docs/backfill.md.
    """


@backfill.command("scan")
@_AGENT
@_AFTER
@_BEFORE
@_JSON
def scan_cmd(agent: str, after: str | None, before: str | None, as_json: bool) -> None:
    """Report the stored sessions of AGENT: files, bytes and turns in range (nothing is written)."""
    from paxm_core.backfill.sources import scan, transcript_reader

    name, reader = transcript_reader(_plugin_manager(), agent)
    report = scan(name, reader, _when(after, "--after"), _when(before, "--before"))
    if as_json:
        echo_json(asdict(report), ascii=True)
        return
    click.echo(
        f"{name}: {report.turns} turns in {report.sessions} sessions, {report.files} files ({_size(report.bytes)})"
    )
    if report.turns:
        click.echo(f"  from {_stamp(report.first_turn_at)} to {_stamp(report.last_turn_at)}")


@backfill.command("run")
@_AGENT
@_AFTER
@_BEFORE
@click.option(
    "--provider",
    default="",
    metavar="NAME",
    help="Store into this provider only (default: the write profiles' providers).",
)
@click.option(
    "--rate",
    default="30/m",
    show_default=True,
    metavar="N/UNIT",
    help="Turns per second/minute/hour (s, m, h) per remote provider; local providers are"
    " unthrottled unless --rate is given.",
)
@click.option(
    "--max-duration",
    default="",
    metavar="DURATION",
    help="Stop reading after this long (e.g. 10m); run again to resume.",
)
@click.option("--background", is_flag=True, help="Run detached at low priority; follow it with `paxm backfill status`.")
@click.option(
    "--priority",
    type=click.Choice(["low", "normal"]),
    default="low",
    show_default=True,
    help="CPU priority: low (nice 10) keeps a backfill from slowing live hooks and the agent.",
)
@click.option("--batch", default=500, show_default=True, hidden=True, type=click.IntRange(1, 5000))
@click.option(
    "--workers",
    type=click.IntRange(0, 16),
    default=None,
    metavar="N",
    help="Processes reading and rendering transcripts (default: one per core but one, for"
    " large backfills; 0: in the run's own process).",
)
@click.option(
    "--delivery",
    type=click.Choice(["auto", "process", "thread"]),
    default="auto",
    show_default=True,
    hidden=True,
    help="Accepted and ignored: delivery runs on a thread of the run.",
)
@_JSON
@click.pass_context
def run_cmd(
    ctx: click.Context,
    agent: str,
    after: str | None,
    before: str | None,
    provider: str,
    rate: str,
    max_duration: str,
    background: bool,
    priority: str,
    batch: int,
    workers: int | None,
    delivery: str,
    as_json: bool,
) -> None:
    """Backfill AGENT's past turns into memory (resumable; a second run stores nothing new)."""
    from paxm_core.backfill.rate import parse_rate
    from paxm_core.backfill.runner import BackfillOptions, BackfillRun, backfill_dir, lower_priority
    from paxm_core.backfill.sources import transcript_reader
    from paxm_core.capture import default_queue_path
    from paxm_core.duration import parse_duration
    from paxm_core.progress import progress

    state: CliState = ctx.find_root().obj
    per_second = parse_rate(rate)
    rate_given = ctx.get_parameter_source("rate") is not click.core.ParameterSource.DEFAULT
    limit = parse_duration(max_duration) if max_duration else None
    after_at = _when(after, "--after")
    before_at = _when(before, "--before") if before else time.time() - 120  # a turn may still be live
    pm = _plugin_manager()
    name, reader = transcript_reader(pm, agent)
    if background:
        _run_in_background(state, name, as_json)
        return
    if priority == "low":
        lower_priority()
    runtime = state.runtime()
    options = BackfillOptions(
        after=after_at,
        before=before_at,
        provider=provider,
        rate=per_second,
        rate_everywhere=rate_given,
        max_duration=limit,
        batch=batch,
        workers=workers,
        live_queue=Path(default_queue_path(runtime.config)),
    )
    with progress("backfill", show=not as_json) as bar:

        def on_progress(p: Progress) -> None:
            r = p.report
            counts = f"turns {r.found}  queued {r.queued}  delivered {r.delivered}  skipped {p.skipped}"
            bar.update(p.bytes_done, max(p.bytes_total, 1), detail=counts)

        job = BackfillRun(runtime, name, reader, options, state_dir=backfill_dir(runtime.config), progress=on_progress)
        try:
            report = job.run()
        finally:
            job.close()
    _print_run_report(name, report, as_json)
    if report.state in ("failed", "incomplete") or report.dead:
        ctx.exit(1)


def _run_in_background(state: CliState, name: str, as_json: bool) -> None:
    """Re-run this command line without --background in a detached process and say where it logs."""
    from paxm_core.backfill.runner import backfill_dir
    from paxm_core.private_files import open_private

    log = backfill_dir(state.config()) / "run.log"
    argv = [a for a in sys.argv[1:] if a != "--background"]
    if state.config_path and "--config" not in argv and "-c" not in argv:
        argv = ["--config", str(state.config_path), *argv]
    fd = open_private(log, os.O_WRONLY | os.O_APPEND)  # 0600 when new, never through a link
    try:
        pid = subprocess.Popen(
            [sys.executable, "-c", "from paxm_core.cli import main; main()", *argv],
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            start_new_session=True,  # survives the terminal closing
            close_fds=True,
        ).pid
    finally:
        os.close(fd)
    if as_json:
        click.echo(json.dumps({"background": True, "pid": pid, "log": str(log)}))
    else:
        click.echo(f"backfill of {name} running in the background (pid {pid}); see `paxm backfill status`")


def _print_run_report(name: str, report: RunReport, as_json: bool) -> None:
    if as_json:
        echo_json(asdict(report), ascii=True)
        return
    click.echo(
        f"{name}: {report.state}: {report.queued} turns queued, {report.delivered} delivered"
        f" to {', '.join(report.providers) or 'no provider'} in {report.seconds:.1f}s"
        f" ({report.skipped_done} already done, {report.skipped_live} captured live,"
        f" {report.skipped_range} out of range, {report.empty} with nothing to store)"
    )
    if report.owed or report.dead:
        click.echo(f"  {report.owed} still owed, {report.dead} dead: run again, or see `paxm backfill status`")
    for error in report.errors[:5]:
        click.echo(f"  error: {error}", err=True)
    if report.state == "paused":
        click.echo("  stopped at --max-duration: run the same command again to resume")


def _status_agent(agent: str) -> str:
    """``--agent`` as the runs record it: an installed integration's canonical name (aliases too)."""
    wanted = agent.strip()
    if not wanted:
        return ""
    integration = _plugin_manager().integration(wanted)
    return str(getattr(integration, "name", "") or wanted.lower()) if integration is not None else wanted.lower()


def _run_matches(run: Mapping[str, object], agent: str, provider: str) -> bool:
    if agent and run["agent"] != agent:
        return False
    # a run records every provider it wrote to, comma-separated
    return not provider or provider in str(run["provider"] or "").split(",")


@backfill.command("status")
@click.option("--agent", "agent", default="", metavar="NAME", help="Only this harness's runs and turns (any alias).")
@click.option("--provider", default="", metavar="NAME", help="Only runs that wrote to this provider instance.")
@_JSON
@click.pass_context
def status_cmd(ctx: click.Context, agent: str, provider: str, as_json: bool) -> None:
    """Recent backfill runs, turns done per agent and what the backfill queue still owes.

    --agent and --provider (upstream's flags) narrow the report to one harness and one
    provider; without them every run is shown.
    """
    from paxm_core.backfill.checkpoint import CheckpointStore
    from paxm_core.backfill.runner import backfill_dir
    from paxm_core.capture import CaptureQueue

    directory = backfill_dir(ctx.find_root().obj.config())
    store = CheckpointStore(directory / "checkpoint.sqlite")
    try:
        runs, counts = store.runs(), store.counts()
    finally:
        store.close()
    agent, provider = _status_agent(agent), provider.strip()
    runs = [run for run in runs if _run_matches(run, agent, provider)]
    if agent:
        counts = {name: by_how for name, by_how in counts.items() if name == agent}
    queue_path = directory / "queue.sqlite"
    queue: dict[str, Any] = {}
    if queue_path.exists():
        with CaptureQueue(queue_path, recover=False) as q:
            status = q.status(dead_limit=10)
            queue = {
                "deliveries": status.deliveries,
                "owed": q.owed(),
                "dead": [
                    {"episode_id": d.episode_id, "provider": d.provider, "error": d.last_error}
                    for d in status.dead
                    if not provider or d.provider == provider
                ],
            }
    if as_json:
        echo_json({"runs": runs, "turns": counts, "queue": queue}, ascii=True)
        return
    if not runs:
        if agent or provider:
            wanted = " and ".join(f"{k} {v}" for k, v in (("agent", agent), ("provider", provider)) if v)
            click.echo(f"no backfill run for {wanted} (`paxm backfill status` shows every run)")
            return
        click.echo("no backfill has run yet (try `paxm backfill scan --agent claude`)")
        return
    for agent, by_how in sorted(counts.items()):
        click.echo(f"{agent}: {', '.join(f'{how} {n}' for how, n in sorted(by_how.items()))}")
    for run in runs[:5]:
        click.echo(
            f"run {run['id']} {run['agent']} -> {run['provider'] or '-'}: {run['state']}, found {run['found']},"
            f" queued {run['queued']}, delivered {run['delivered']}, skipped {run['skipped']}"
            f" (started {_stamp(run['started_at'])})"
        )
        if run["error"]:
            click.echo(f"  error: {run['error'][:300]}")
    if queue:
        click.echo(f"queue: {queue['owed']} owed, deliveries {queue['deliveries']}")
