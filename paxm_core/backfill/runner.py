"""``paxm backfill run``: read past turns, queue them in batches, deliver them in batches.

The backfill has its own capture queue file (``<config dir>/backfill/queue.sqlite``), built
by the same :class:`~paxm_core.capture.CaptureQueue` as the live one: same episodes, same
checksums, same lease recovery after kill -9.  Keeping it apart means a backfill never holds
the live queue's write lock and its thousands of episodes never sit ahead of a live episode
in the delivery worker; the live hook path is not touched at all.

Order of a step (each step is short and durable before the next):
1. render up to ``batch`` turns, skip those already recorded or captured live;
2. ``append_many``: one transaction for all their events (the turn_end seals each episode);
3. record the turn ids in the checkpoint store;
4. deliver: ``claim_batch`` + one ``put_to_provider`` (a provider ``put_batch``) +
   ``complete_many`` (:func:`paxm_core.capture.batch.deliver_batch`, which falls back to one
   by one when the batch write fails), repeated until the queue owes nothing, at ``--rate``
   for remote providers.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from paxm_core.backfill.checkpoint import CheckpointStore, private_dir
from paxm_core.backfill.rate import RateLimiter
from paxm_core.backfill.render import TurnRenderer, live_fingerprint
from paxm_core.backfill.workers import auto_workers, render_files_parallel, render_files_serial, worker_setup
from paxm_core.integration import SupportsTranscripts

__all__ = ["BackfillOptions", "BackfillRun", "Progress", "RunReport", "backfill_dir"]

DEFAULT_BATCH = 500
#: batches rendered and queued ahead of delivery (bounds the backfill queue's backlog)
LOOKAHEAD = 2
DELIVERY_TIMEOUT = 120.0


def backfill_dir(config: Any) -> Path:
    """``<config dir>/backfill`` (created 0700)."""
    return private_dir(Path(str(getattr(config, "config_dir", "."))) / "backfill")


@dataclass
class Progress:
    """A snapshot for the progress bar: bytes read of the total, and turn counts."""

    bytes_done: int = 0
    bytes_total: int = 0
    found: int = 0
    queued: int = 0
    skipped: int = 0
    delivered: int = 0
    started: float = field(default_factory=time.monotonic)

    def eta(self) -> float | None:
        """Seconds left, from the bytes read so far (``None`` until there is a rate)."""
        elapsed = time.monotonic() - self.started
        if self.bytes_done <= 0 or elapsed <= 0:
            return None
        return max(0.0, (self.bytes_total - self.bytes_done) / (self.bytes_done / elapsed))


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
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Plain data."""
        return asdict(self)


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
        runtime: Any,
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
                from paxm_core.errors import UsageError

                known = ", ".join(sorted(enabled)) or "none"
                raise UsageError(f"provider {options.provider!r} is not enabled (enabled: {known})")
            chosen = options.provider
            routes: Any = lambda _profile: [chosen]  # noqa: E731 - every profile to the one provider
            self.providers = [chosen]
        else:
            routes = routes_from_write_profiles(config.write_profiles)
            self.providers = sorted({n for names in routes.values() for n in names if n in enabled})
        self.checkpoint = CheckpointStore(state_dir / "checkpoint.sqlite")
        queue_path = state_dir / "queue.sqlite"
        self.queue = CaptureQueue(queue_path, routes=routes)
        self.renderer = TurnRenderer(runtime, self.queue)
        self._limiters = {name: RateLimiter(self._rate_for(name)) for name in self.providers}
        self._tick_lock = threading.Lock()
        self._deliverer = _Deliverer(self._deliver_all, lambda: self.queue.owed(include_open=False))
        self.report = RunReport(agent, list(self.providers))
        self.progress = Progress()

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
            self._deliver_all()  # what a killed run left queued goes first
            self._deliverer.start()
            done = self.checkpoint.done_turns(self.agent)
            live = self._live_fingerprints()
            files = []
            for path in self.reader.transcript_files():
                try:
                    info = path.stat()
                except OSError:
                    continue
                if self.checkpoint.file_done(self.agent, path, info.st_size, info.st_mtime_ns):
                    continue
                files.append((path, info.st_size, info.st_mtime_ns))
            self.progress.bytes_total = sum(f[1] for f in files)
            workers = self.options.workers
            if workers is None:
                workers = auto_workers(self.progress.bytes_total)
            setup = None
            if workers > 0 and files:
                setup = worker_setup(self.runtime, self.reader, self.options.after, self.options.before, done)
            if setup is not None:
                self.report.workers = min(workers, len(files))
                source = render_files_parallel(setup, files, workers)
            else:
                source = render_files_serial(
                    self.renderer, self.reader, files, self.options.after, self.options.before, done
                )
            batch: list[tuple[str, str, list[Any]]] = []
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
                        self.report.found += 1
                        self.progress.found += 1
                        if kind == "range":
                            self.report.skipped_range += 1
                            continue
                        if kind == "done" or turn_id in done:  # a worker renders before this run's additions
                            self.report.skipped_done += 1
                            self.progress.skipped += 1
                            continue
                        done.add(turn_id)
                        if fingerprint and fingerprint in live:
                            self.report.skipped_live += 1
                            self.progress.skipped += 1
                            batch.append((turn_id, "live", []))
                        elif not events:
                            self.report.empty += 1
                            batch.append((turn_id, "empty", []))
                        else:
                            batch.append((turn_id, "queued", events))
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
        except BaseException as exc:
            self._deliverer.abandon()
            self.report.state = "failed"
            self.report.errors.append(str(exc) or type(exc).__name__)
            self._finish(run_id, started)
            raise
        self._finish(run_id, started)
        return self.report

    def _finish(self, run_id: int, started: float) -> None:
        status = self.queue.status(dead_limit=20)
        self.report.owed = self.queue.owed()
        self.report.dead = status.deliveries.get("dead", 0)
        self.report.errors.extend(f"{d.episode_id} -> {d.provider}: {d.last_error}" for d in status.dead[:5])
        if self.report.state == "done" and self.report.owed:
            self.report.state = "incomplete"
        self.report.seconds = time.monotonic() - started
        try:
            self.checkpoint.update_run(
                run_id,
                found=self.report.found,
                queued=self.report.queued,
                skipped=self.report.skipped_done + self.report.skipped_live,
                delivered=self.report.delivered,
                state=self.report.state,
                error="; ".join(self.report.errors)[:1000],
                finished_at=time.time(),
            )
        except sqlite3.Error:
            pass

    def _flush(
        self,
        batch: list[tuple[str, str, list[Any]]],
        files: list[tuple[Path, int, int, int]],
        run_id: int,
        *,
        last: bool = False,
    ) -> None:
        events = [e for _, _, evs in batch for e in evs]
        if events:
            # a run killed after append_many but before the checkpoint renders these again:
            # the queued copy wins (rendering metadata may differ slightly, e.g. a changed template).
            # Worker processes send events already encoded (tuples); the serial path, events.
            if isinstance(events[0], tuple):
                self.queue.append_encoded(events, keep_existing=True)
            else:
                self.queue.append_many(events, keep_existing=True)
        if batch:
            self.checkpoint.record_turns(self.agent, [(t, how) for t, how, _ in batch])
        queued = sum(1 for _, how, _ in batch if how == "queued")
        self.report.queued += queued
        self.progress.queued += queued
        # Delivery overlaps the reading and rendering of the next batch (a background
        # thread; the provider's SQLite work releases the GIL), at most LOOKAHEAD batches
        # behind.  A file is marked done once its turns are queued and recorded: what a kill
        # leaves undelivered is in the durable queue, delivered first by the next run.
        if last:
            self._deliverer.finish()
        else:
            self._deliverer.kick()
            self._deliverer.wait_below(LOOKAHEAD * self.options.batch)
        for path, size, mtime_ns, count in files:
            self.checkpoint.mark_file(self.agent, path, size, mtime_ns, count)
        self.checkpoint.update_run(
            run_id,
            found=self.report.found,
            queued=self.report.queued,
            skipped=self.report.skipped_done + self.report.skipped_live,
            delivered=self.report.delivered,
        )
        self._tick()

    def _deliver_all(self) -> None:
        from paxm_core.capture.batch import deliver_stream

        for provider in self.providers:
            put = self._writer(provider)
            # the next batch is claimed (and the rate limiter waited for) while one is written;
            # dead deliveries are counted from the queue status at the end
            deliver_stream(
                self.queue,
                provider,
                lambda _batch: put,  # noqa: B023 - called within this iteration
                self._record,
                limit=self.options.batch,
                allowance=self._limiters[provider].allowance,
            )

    def _writer(self, provider: str) -> Callable[[list[Any]], list[Any]]:
        def put(items: list[Any]) -> list[Any]:
            return list(self.runtime.router.put_to_provider(provider, _with_sequences(items), DELIVERY_TIMEOUT))

        return put

    def _record(self, outcomes: list[Any], _batch: list[Any]) -> None:
        for outcome in outcomes:
            if outcome.state == "delivered":
                self.report.delivered += 1
                self.progress.delivered += 1
            elif outcome.error:
                self.report.errors.append(f"{outcome.episode_id}: {outcome.error}"[:300])
        del self.report.errors[:-20]
        self._tick()

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


class _Deliverer:
    """Runs ``deliver()`` on one background thread whenever kicked; errors surface in the caller."""

    def __init__(self, deliver: Callable[[], None], owed: Callable[[], int]) -> None:
        self._deliver = deliver
        self._owed = owed
        self._cond = threading.Condition()
        self._wanted = False
        self._busy = False
        self._closed = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="paxm-backfill-delivery", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._wanted and not self._closed:
                    self._cond.wait()
                if not self._wanted:
                    return
                self._wanted, self._busy = False, True
            try:
                self._deliver()
            except BaseException as exc:  # handed to the run's thread
                with self._cond:
                    self._error = exc
            with self._cond:
                self._busy = False
                self._cond.notify_all()
                if self._error is not None:
                    return

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def kick(self) -> None:
        with self._cond:
            self._raise()
            self._wanted = True
            self._cond.notify_all()

    def wait_below(self, backlog: int) -> None:
        """Wait while a delivery pass runs and more than ``backlog`` sealed episodes are owed.

        A pass ends when nothing is claimable, so what is owed after it waits for a retry
        (a failing provider): the run goes on, as a synchronous delivery would.
        """
        while True:
            with self._cond:
                self._raise()
                if not self._busy and not self._wanted:
                    return
            if self._owed() <= backlog:
                return
            with self._cond:
                if self._busy or self._wanted:
                    self._cond.wait(0.05)

    def finish(self) -> None:
        """Stop the thread, then deliver what is left on the caller's thread."""
        self.abandon()
        with self._cond:
            self._raise()
        self._deliver()

    def abandon(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def _with_sequences(items: list[Any]) -> list[Any]:
    """Give past items their session sequence from the time they happened.

    A live write gets the next sequence of its session from the shared sequence store (one
    fsynced transaction each); a past turn's place in its session is known: its start time
    in nanoseconds, the same scale the store uses, so past and live turns interleave in the
    order they happened.  The router keeps an explicit ``sequence`` as given.
    """
    from paxm_core.attribution import META_SEQUENCE

    out = []
    last: dict[str, int] = {}
    for item in items:
        if (item.metadata.get(META_SEQUENCE) or "").strip() or item.created_at is None:
            out.append(item)
            continue
        session = item.origin.session_id.strip() or item.metadata.get("session_id", "")
        sequence = max(int(item.created_at.timestamp() * 1_000_000) * 1000, last.get(session, 0) + 1)
        last[session] = sequence
        out.append(item.replace(metadata={**item.metadata, META_SEQUENCE: str(sequence)}))
    return out


def lower_priority() -> None:
    """Run at a lower CPU and I/O priority than the hooks (best effort)."""
    try:
        os.nice(10)
    except OSError:
        pass
