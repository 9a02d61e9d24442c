"""``paxm backfill run``: read past turns, queue them in batches, deliver them in batches.

The backfill has its own capture queue file (``<config dir>/backfill/queue.sqlite``), built
by the same :class:`~paxm_core.capture.CaptureQueue` as the live one: same episodes, same
checksums, same lease recovery after kill -9.  Keeping it apart means a backfill never holds
the live queue's write lock and its thousands of episodes never sit ahead of a live episode
in the delivery worker; the live hook path is not touched at all.

Order of a step (each step is short and durable before the next):
1. read and render up to ``batch`` turns (in worker processes for large runs), skip those
   already recorded or captured live;
2. ``append_many``: one transaction for all their events (the turn_end
   seals each episode);
3. record the turn ids, the files finished and the run's counters in the checkpoint store
   (one transaction);
4. kick delivery (:mod:`paxm_core.backfill.delivery`, a thread of the run): ``claim_batch`` +
   one ``put_to_provider`` (a provider ``put_batch``) + ``complete_many``, repeated until
   nothing is claimable, at ``--rate`` for remote providers; the next step waits while more
   than ``LOOKAHEAD`` batches are owed.
A kill between 2 and 3 re-renders the same events on resume (duplicates, ignored); a kill
between the put and ``complete_many`` re-delivers the same episode ids (provider upsert).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.api.integration import SupportsTranscripts
from paxm_core.backfill.checkpoint import CheckpointStore
from paxm_core.backfill.delivery import ThreadDeliverer, deliver_all
from paxm_core.backfill.rate import RateLimiter
from paxm_core.backfill.render import TurnRenderer, live_fingerprint
from paxm_core.backfill.workers import FileTurns, auto_workers, render_file, render_files_parallel, worker_setup

if TYPE_CHECKING:
    from paxm_core.capture.model import CaptureEvent
    from paxm_core.capture.queue import EncodedEvent
    from paxm_core.runtime import Runtime

__all__ = ["BackfillOptions", "BackfillRun", "Progress", "RunReport", "backfill_dir"]

DEFAULT_BATCH = 500
#: batches rendered and queued ahead of delivery (bounds the backfill queue's backlog)
LOOKAHEAD = 2
#: a turn's capture events: rendered in this process, or encoded rows from a worker process
Events = list["CaptureEvent | EncodedEvent"]


def backfill_dir(config: object) -> Path:
    """``<config dir>/backfill`` (created 0700)."""
    from paxm_core.private_files import private_dir

    return Path(private_dir(Path(str(getattr(config, "config_dir", "."))) / "backfill"))


@dataclass
class RunReport:
    """The outcome of one run (``--json``)."""

    agent: str
    providers: list[str]
    state: str = "done"
    files: int = 0
    found: int = 0
    queued: int = 0
    skipped_done: int = 0
    skipped_live: int = 0
    skipped_range: int = 0
    empty: int = 0
    delivered: int = 0
    dead: int = 0
    owed: int = 0
    seconds: float = 0.0
    #: processes that read and rendered the files (0: the run's own process)
    workers: int = 0
    #: kept in ``--json`` for its readers: delivery always runs on a thread of the run
    delivery: str = "thread"
    delivery_cpu: float = 0.0
    errors: list[str] = field(default_factory=list)


@dataclass
class Progress:
    """A snapshot for the progress bar: bytes read of the total, and the run's turn counts."""

    report: RunReport
    bytes_done: int = 0
    bytes_total: int = 0

    @property
    def skipped(self) -> int:
        return self.report.skipped_done + self.report.skipped_live


@dataclass
class BackfillOptions:
    """What ``paxm backfill run`` was asked for."""

    after: float | None = None
    before: float | None = None
    provider: str = ""
    #: turns per second per remote provider (``None``: unlimited); local providers are not held
    #: to it unless ``rate_everywhere``
    rate: float | None = 0.5
    rate_everywhere: bool = False
    max_duration: float | None = None
    batch: int = DEFAULT_BATCH
    live_queue: Path | None = None
    #: processes reading and rendering files (``None``: one per core but one, for large runs;
    #: 0: in this process)
    workers: int | None = None


class BackfillRun:
    """One backfill of one agent into the configured (or chosen) providers."""

    def __init__(
        self,
        runtime: Runtime,
        agent: str,
        reader: SupportsTranscripts,
        options: BackfillOptions,
        *,
        state_dir: Path,
        progress: Callable[[Progress], None] | None = None,
    ) -> None:
        from paxm_core.capture import CaptureQueue, routes_from_write_profiles

        self.runtime = runtime
        self.agent = agent
        self.reader = reader
        self.options = options
        self._progress_cb = progress
        config = runtime.config
        enabled = set(config.enabled_providers())
        if options.provider:
            if options.provider not in enabled:
                from paxm_core.api.errors import UsageError

                known = ", ".join(sorted(enabled)) or "none"
                raise UsageError(f"provider {options.provider!r} is not enabled (enabled: {known})")
            chosen = options.provider
            routes: Any = lambda _profile: [chosen]  # noqa: E731 - every profile to the one provider
            self.providers = [chosen]
        else:
            routes = routes_from_write_profiles(config.write_profiles)
            self.providers = sorted({n for names in routes.values() for n in names if n in enabled})
        self.checkpoint = CheckpointStore(state_dir / "checkpoint.sqlite")
        self.queue = CaptureQueue(state_dir / "queue.sqlite", routes=routes)
        self.renderer = TurnRenderer(runtime, self.queue)
        self._limiters = {name: RateLimiter(self._rate_for(name)) for name in self.providers}
        self._tick_lock = threading.RLock()  # held by _record while it ticks
        self._deliverer = ThreadDeliverer(self._deliver_all, self._owed)
        self.report = RunReport(agent, list(self.providers))
        self.progress = Progress(self.report)

    def _rate_for(self, provider: str) -> float | None:
        if self.options.rate is None or self.options.rate_everywhere:
            return self.options.rate
        kind = (self.runtime.config.providers[provider].type or provider).strip()
        try:
            locality = self.runtime.plugin_manager.provider_type(kind).locality
        except Exception:  # unknown type: treat as remote, the safe side
            locality = "cloud"
        return None if locality == "local" else self.options.rate

    def close(self) -> None:
        """Close the queue, checkpoint store and renderer."""
        self.renderer.close()
        self.queue.close()
        self.checkpoint.close()

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> RunReport:
        """Backfill everything in range; returns when done, paused (``--max-duration``) or failed."""
        started = time.monotonic()
        deadline = started + self.options.max_duration if self.options.max_duration else None
        run_id = self.checkpoint.start_run(self.agent, ",".join(self.providers))
        try:
            done = self.checkpoint.done_turns(self.agent)
            live = self._live_fingerprints()
            files = self._pending_files()
            self.progress.bytes_total = sum(f[1] for f in files)
            self._deliverer.start()  # its first pass delivers what a killed run left queued
            source = self._source(files, done)
            self._drain(source, done, live, deadline, run_id)
        except BaseException as exc:
            self._deliverer.abandon()
            self.report.state = "failed"
            self.report.errors.append(str(exc) or type(exc).__name__)
            self._finish(run_id, started)
            raise
        self._finish(run_id, started)
        return self.report

    def _pending_files(self) -> list[tuple[Path, int, int]]:
        """The agent's transcript files (path, size, mtime) not recorded as finished at that size and time."""
        files = []
        for path in self.reader.transcript_files():
            try:
                info = path.stat()
            except OSError:
                continue
            if self.checkpoint.file_done(self.agent, path, info.st_size, info.st_mtime_ns):
                continue
            files.append((path, info.st_size, info.st_mtime_ns))
        return files

    def _source(self, files: list[tuple[Path, int, int]], done: set[str]) -> FileTurns:
        """Each file with its turns: rendered in worker processes (large runs), or in this one."""
        workers = self.options.workers
        if workers is None:
            workers = auto_workers(self.progress.bytes_total)
        setup = None
        if workers > 0 and files:
            setup = worker_setup(self.runtime, self.reader, self.options.after, self.options.before, done)
        if setup is not None:
            self.report.workers = min(workers, len(files))
            return render_files_parallel(setup, files, workers)
        after, before = self.options.after, self.options.before
        return (  # read and rendered in this process as they are consumed
            (path, size, mtime_ns, render_file(self.renderer, self.reader, path, after, before, done))
            for path, size, mtime_ns in files
        )

    def _drain(self, source: FileTurns, done: set[str], live: set[str], deadline: float | None, run_id: int) -> None:
        """Queue and checkpoint the rendered turns batch by batch, until done or past ``deadline``."""
        batch: list[tuple[str, str, Events]] = []
        finished_files: list[tuple[Path, int, int, int]] = []
        try:
            for path, size, mtime_ns, turns in source:
                if deadline is not None and time.monotonic() >= deadline:
                    self.report.state = "paused"
                    break
                self.report.files += 1
                count = 0
                for turn_id, kind, events, fingerprint in turns:
                    count += 1
                    entry = self._sort_turn(turn_id, kind, events, fingerprint, done, live)
                    if entry is None:
                        continue
                    batch.append(entry)
                    if len(batch) >= self.options.batch:
                        self._flush(batch, finished_files, run_id)
                        batch, finished_files = [], []
                        if deadline is not None and time.monotonic() >= deadline:
                            break
                else:
                    finished_files.append((path, size, mtime_ns, count))
                    self.progress.bytes_done += size
                    self._tick()
                    continue
                self.report.state = "paused"  # stopped inside a file: it is not marked done
                break
        finally:
            source.close()  # stops the workers (what they had not started is dropped)
        self._flush(batch, finished_files, run_id, last=True)

    def _sort_turn(
        self, turn_id: str, kind: str, events: Events, fingerprint: str, done: set[str], live: set[str]
    ) -> tuple[str, str, Events] | None:
        """Count one rendered turn; its checkpoint entry (turn id, status, events), or None to skip it."""
        self.report.found += 1
        if kind == "range":
            self.report.skipped_range += 1
            return None
        if kind == "done" or turn_id in done:  # a worker renders before this run's additions
            self.report.skipped_done += 1
            return None
        done.add(turn_id)
        if fingerprint and fingerprint in live:
            self.report.skipped_live += 1
            return (turn_id, "live", [])
        if not events:
            self.report.empty += 1
            return (turn_id, "empty", [])
        return (turn_id, "queued", events)

    def _finish(self, run_id: int, started: float) -> None:
        status = self.queue.status(dead_limit=20)
        self.report.owed = self.queue.owed()
        self.report.dead = status.deliveries.get("dead", 0)
        self.report.errors.extend(f"{d.episode_id} -> {d.provider}: {d.last_error}" for d in status.dead[:5])
        if self.report.state == "done" and self.report.owed:
            self.report.state = "incomplete"
        self.report.seconds = time.monotonic() - started
        try:
            error = "; ".join(self.report.errors)[:1000]
            self.checkpoint.record_step(
                run_id, "", (), (), **self._counters(), state=self.report.state, error=error, finished_at=time.time()
            )
        except sqlite3.Error:
            pass

    def _counters(self) -> dict[str, int]:
        """The run's counters as the checkpoint store records them."""
        r = self.report
        return {"found": r.found, "queued": r.queued, "skipped": self.progress.skipped, "delivered": r.delivered}

    def _flush(
        self,
        batch: list[tuple[str, str, Events]],
        files: list[tuple[Path, int, int, int]],
        run_id: int,
        *,
        last: bool = False,
    ) -> None:
        events = [e for _, _, evs in batch for e in evs]
        if events:
            # a run killed after append_many but before the checkpoint renders these again:
            # the queued copy wins (rendering metadata may differ slightly, e.g. a changed template)
            self.queue.append_many(events, keep_existing=True)
        queued = sum(1 for _, how, _ in batch if how == "queued")
        self.report.queued += queued
        # the step's turns, the files it finished and the run's counters: one transaction.
        # A file is marked done once its turns are queued and recorded: what a kill leaves
        # undelivered is in the durable queue, delivered first by the next run.
        if batch or files:
            turns = [(t, how) for t, how, _ in batch]
            self.checkpoint.record_step(run_id, self.agent, turns, files, **self._counters())
        # The delivery thread drains the queue while the next batch is read and rendered, at
        # most LOOKAHEAD batches behind.
        if last:
            self._deliverer.finish()
        else:
            self._deliverer.kick()
            self._deliverer.wait_below(LOOKAHEAD * self.options.batch)
        self._tick()

    def _deliver_all(self) -> None:
        deliver_all(self.queue, self.runtime.router, self.providers, self._limiters, self.options.batch, self._record)

    def _record(self, delivered: int, errors: list[str]) -> None:
        """A delivered batch (from the delivery thread)."""
        with self._tick_lock:
            self.report.delivered += delivered
            self.report.errors.extend(errors)
            del self.report.errors[:-20]
        self._tick()

    def _owed(self) -> int:
        return int(self.queue.owed(include_open=False))

    def _live_fingerprints(self) -> set[str]:
        """Fingerprints of the ``user_input`` and ``turn_end`` writes live hooks queued (any state)."""
        from paxm_core.capture.episode import decode_event_payload

        path = self.options.live_queue
        if path is None or not path.exists():
            return set()
        out: set[str] = set()
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
        try:
            rows = conn.execute("SELECT payload_json FROM capture_events").fetchall()
        except sqlite3.Error:
            rows = []
        finally:
            conn.close()
        for (payload,) in rows:
            try:
                item, _ = decode_event_payload(json.loads(payload))
            except (ValueError, TypeError, KeyError):
                continue
            meta = item.metadata
            kind = meta.get("hook_event")
            if kind in ("user_input", "turn_end"):
                out.add(live_fingerprint(meta.get("hook_target", ""), meta.get("session_id", ""), item.text, kind))
        return out

    def _tick(self) -> None:
        if self._progress_cb is not None:
            with self._tick_lock:  # the delivery thread reports progress too
                self._progress_cb(self.progress)


def lower_priority() -> None:
    """Run at a lower CPU and I/O priority than the hooks (best effort)."""
    try:
        os.nice(10)
    except OSError:
        pass
