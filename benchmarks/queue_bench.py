"""Capture-queue benchmark: append latency per event (the hook's ack point) and delivery throughput.

Run: ``uv run python benchmarks/queue_bench.py [--events N] [--episodes N]``.

Every case prints its median (and p95) next to a baseline and the ratio:

* ``append``: ``CaptureQueue.append`` (validation, canonical JSON, SHA-256, idempotency
  lookup, sequence, fsynced COMMIT; every 4th event a ``turn_end`` that also seals) against
  a bare ``INSERT`` + ``COMMIT`` of the same payload on the same kind of file with the same
  pragmas (``synchronous=FULL``): the cost of a durable commit itself;
* ``append_raw``: the stdlib hook client's inbox write (open, schema check, INSERT, COMMIT,
  close) against a bare connect + INSERT + COMMIT + close;
* ``delivery``: episodes/s (wall, and per CPU second, split by thread) from sealed episodes to provider
  through ``DeliveryWorker`` and the real Router (batched writes, one claimed batch at a time, for providers
  with ``put_batch``; for SQLite also ``batch_size=1``, one write per episode, for the
  batched/one-by-one ratio), against the same items written with ``Router.put_to_provider``
  in a plain loop (the same write pipeline without the queue): the ratio is the queue's
  overhead (claims, integrity checks, leases, outcome bookkeeping, threads).  Providers: an
  in-memory ID-honouring store (one write per episode), the same with ``put_batch`` (the
  queue+worker's own ceiling: its write costs ~nothing) and the real SQLite provider.
  Routers reserve session sequences in a persistent store, as the daemon's do
  (``daemon_router``): every episode has a session, so that reservation is part of a write.
  Outcomes go to a real telemetry directory through the daemon's background recorder
  (``daemon_telemetry``); the line says how long after the last delivery it finished.

* ``floor`` (``--only floor``): only the SQL that delivery into SQLite cannot skip (the queue's
  claim, lease and completion statements, and ``executemany`` of the provider's own rows), with
  no Python around it: what one core needs per episode before any verification or rendering.

* ``single`` (``--only single``): the same work on one thread into the real SQLite provider:
  ``append_many`` (batches of 512 events), then ``claim_batch`` + ``deliver_batch`` through
  the Router until nothing is due; CPU microseconds per episode of each step.  No threads,
  so it is the figure to run under ``valgrind --tool=callgrind`` (with ``--append-only`` for
  the append alone: the difference of the two runs is the delivery's instructions).

Files live in a temp dir.  The machine is shared, so compare ratios rather than absolutes.
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from paxm_contracttest.fakes import IdStoreProvider
from paxm_core import Deadline, MemoryItem, MemoryRef
from paxm_core.capture import CaptureEvent, CaptureQueue, DeliveryWorker
from paxm_core.capture._inbox import append_raw, connect, sha256_hex, utc_stamp
from paxm_core.capture.episode import event_payload_json
from paxm_core.router import Router
from paxm_core.session_sequence import SessionSequenceStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import record  # noqa: E402
from timing import line, numbered, timed  # noqa: E402


class MemoryProvider(IdStoreProvider):
    """The in-memory store without ``put_batch``: the worker puts one item at a time."""


class BatchMemoryProvider(IdStoreProvider):
    """The in-memory store with ``put_batch``: the worker takes its batched, pipelined path,
    so its figure is the queue's and worker's own cost with a write that costs ~nothing."""

    def put_batch(self, items: Any, deadline: Deadline) -> list[MemoryRef]:
        return [self.put(item, deadline) for item in items]


def daemon_router(providers: dict[str, Any], path: Path) -> Router:
    """A router as the daemon builds one: session sequences from the persistent store at ``path``.

    Every delivered episode has a session, so each write reserves sequences in that store
    (an fsynced SQLite commit); a router with the in-memory fallback would leave that out.
    """
    return Router(providers, sequence_allocator=SessionSequenceStore(path))


def daemon_telemetry(directory: Path) -> tuple[Any, Any]:
    """``(recorder, telemetry)`` as the daemon wires a worker's: outcomes queue for a thread
    that writes them to a real telemetry directory (events log and metrics file)."""
    from types import SimpleNamespace

    from paxm_core.passive.daemon import BackgroundRecorder
    from paxm_core.telemetry import Telemetry, TelemetrySettings

    recorder = BackgroundRecorder(sink=Telemetry(None, settings=TelemetrySettings(dir=directory)))
    return recorder, SimpleNamespace(record=recorder.wrap("record"))


def text(n: int) -> str:
    return f"User input {n}: please refactor the billing module and keep the public API stable. " * 4


#: ``--attributed``: events carry what a hook's capture carries (see ``attributed_item``)
ATTRIBUTED = False


def attributed_item(text: str, created: datetime, session: str, turn: str) -> MemoryItem:
    """An item shaped like a hook capture's: tier, attribution (origin, scope, provenance) and
    the hook's metadata, which the claim decodes and the provider stores for every event."""
    from paxm_core.api.types import MemoryOrigin, MemoryScope, Provenance

    return MemoryItem(
        text=text,
        source="hook:claude-code",
        metadata={"session_id": session, "turn_id": turn, "hook_event": "UserPromptSubmit", "agent": "claude-code"},
        created_at=created,
        tier="ltm",
        origin=MemoryOrigin("root", "claude-code", session, turn),
        scope=MemoryScope("personal", "root"),
        provenance=Provenance("root", "claude-code", "personal", "root"),
    )


def turn_events(prefix: str, episodes: int, sessions: int) -> list[CaptureEvent]:
    """Two events per episode (an open one, then the turn's end), spread over ``sessions``."""
    created = datetime.now(UTC)
    events = []
    for n in range(episodes):
        session = f"session-{n % sessions}"
        if ATTRIBUTED:
            first = attributed_item(text(n), created, session, f"{prefix}{n}")
            last = attributed_item(text(n), created, session, f"{prefix}{n}")
        else:
            first = MemoryItem(text=text(n), created_at=created)
            last = MemoryItem(text=text(n), created_at=created)
        events.append(CaptureEvent(f"{prefix}{n}a", session, first))
        events.append(CaptureEvent(f"{prefix}{n}b", session, last, terminal=True))
    return events


def bench_append(root: Path, events: int) -> None:
    q = CaptureQueue(root / "append.sqlite", routes={"default": ["mem"]})
    created = datetime.now(UTC)

    def one(n: int) -> None:
        item = MemoryItem(text=text(n), created_at=created)
        q.append(CaptureEvent(f"evt_{n}", f"session-{n % 10}", item, terminal=n % 4 == 3))

    times = timed(numbered(one), events)
    q.close()

    raw = connect(root / "baseline.sqlite")
    raw.execute("PRAGMA synchronous = FULL")
    payload = event_payload_json(MemoryItem(text=text(0), created_at=created), "default")

    def bare(n: int) -> None:
        raw.execute("BEGIN IMMEDIATE")
        raw.execute(
            "INSERT INTO capture_events(event_id, session_key, sequence, payload_json, payload_hash, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (f"b{n}", "s", n, payload, sha256_hex(payload.encode()), utc_stamp()),
        )
        raw.execute("COMMIT")

    baseline = timed(numbered(bare), events)
    raw.close()
    line("append (open event)", [t for i, t in enumerate(times) if i % 4 != 3], baseline)
    line("append (turn_end, seals episode)", [t for i, t in enumerate(times) if i % 4 == 3], baseline)

    path = root / "inbox.sqlite"
    body = b'{"prompt": "%s"}' % text(0).encode()
    rounds = min(events, 300)
    hook = timed(numbered(lambda n: append_raw(path, f"evt_{n}", "codex", "user_input", body)), rounds)
    connect(root / "inbox-baseline.sqlite").close()

    def bare_raw(n: int) -> None:
        conn = sqlite3.connect(root / "inbox-baseline.sqlite", isolation_level=None)
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO capture_inbox(event_id, target, event, raw, raw_hash, received_at) VALUES (?, ?, ?, ?, ?, ?)",
            (f"b{n}", "codex", "user_input", body, "h", "t"),
        )
        conn.execute("COMMIT")
        conn.close()

    line("append_raw (hook client, daemon down)", hook, timed(numbered(bare_raw), rounds))


@contextlib.contextmanager
def thread_cpu() -> Iterator[dict[str, float]]:
    """CPU seconds of every thread started inside the block, summed by thread name.

    The split shows where delivery's CPU goes: the worker's delivery streams, or the caller.
    """
    spent: dict[str, float] = {}
    lock = threading.Lock()
    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        try:
            original(self)
        finally:
            with lock:
                spent[self.name] = spent.get(self.name, 0.0) + time.thread_time()

    threading.Thread.run = run  # type: ignore[method-assign]
    try:
        yield spent
    finally:
        threading.Thread.run = original  # type: ignore[method-assign]


def bench_delivery(
    root: Path, name: str, make: Callable[[str], Any], episodes: int, sessions: int, *, batch_size: int | None = None
) -> float:
    """``batch_size``: episodes per write (``None``: the provider's own, as the daemon's worker)."""
    label = "own" if batch_size is None else str(batch_size)
    provider = make(f"a{label}")
    q = CaptureQueue(root / f"deliver-{name}-{label}.sqlite", routes={"default": [provider.name]})
    for event in turn_events("e", episodes, sessions):
        q.append(event)
    router = daemon_router({provider.name: provider}, root / f"sequences-{name}-{label}.sqlite")
    with thread_cpu() as threads:
        recorder, telemetry = daemon_telemetry(root / f"telemetry-{name}-{label}")
        worker = DeliveryWorker(q, router, batch_size=batch_size, telemetry=telemetry)
        size = worker.batch_for(provider.name)
        start, cpu_start, own_start = time.perf_counter(), time.process_time(), time.thread_time()
        report = worker.flush(timeout=600)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        threads["flush (caller)"] = time.thread_time() - own_start
        # the daemon's telemetry thread may still be writing outcomes: how far behind it was
        recorder.close(timeout=600)
        behind = time.perf_counter() - start - elapsed
    assert report.ok, report
    items = [c.items[0] for c in _all_items(q, provider.name, episodes)]
    assert len(items) == episodes, len(items)
    router.close()
    q.close()
    direct = make(f"b{label}")
    direct_router = daemon_router({direct.name: direct}, root / f"sequences-{name}-{label}-direct.sqlite")
    start = time.perf_counter()
    # the same items in writes of the same size as the worker's
    for first in range(0, len(items), size):
        direct_router.put_to_provider(direct.name, items[first : first + size], 30.0)
    base = time.perf_counter() - start
    direct_router.close()
    print(
        f"delivery via queue, {name:<16} {episodes} episodes: {episodes / elapsed:7.1f} episodes/s"
        f"  | Router.put_to_provider loop {episodes / base:7.1f} items/s (writes of {size})"
        f"  ratio {elapsed / base:5.2f}x  (cpu {episodes / cpu:7.1f} episodes/s)"
        f"  telemetry done {behind * 1000:.0f} ms later"
    )
    split = "  ".join(f"{name} {seconds * 1e6 / episodes:5.1f}" for name, seconds in sorted(threads.items()))
    print(f"  CPU us per episode by thread: {split}")
    return episodes / elapsed


def bench_phases(root: Path, episodes: int, sessions: int = 20, batch: int = 256) -> None:
    """CPU microseconds per episode of each step of batched delivery, on this thread.

    ``append_many`` (two events and a seal per episode), then ``claim_batch`` +
    ``deliver_batch`` (``Router.put_to_provider`` into the in-memory ``put_batch`` store,
    ``complete_many``) until nothing is due: the queue's own cost, without threads.
    """
    provider = BatchMemoryProvider("phases")
    q = CaptureQueue(root / "phases.sqlite", routes={"default": [provider.name]})
    router = daemon_router({provider.name: provider}, root / "sequences-phases.sqlite")
    events = turn_events("p", episodes, sessions)
    spent: dict[str, float] = {}

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - started

        return run

    append_many = timed("append_many", q.append_many)
    for first in range(0, len(events), 2 * batch):
        append_many(events[first : first + 2 * batch])
    claim_batch = timed("claim_batch", q.claim_batch)
    q.complete_many = timed("complete_many", q.complete_many)  # type: ignore[method-assign]
    put = timed("Router.put_to_provider", lambda items: router.put_to_provider(provider.name, items, 30.0))
    from paxm_core.capture.batch import deliver_batch

    delivered = 0
    while True:
        claims, _ = claim_batch(provider.name, limit=batch)
        if not claims:
            break
        delivered += len(deliver_batch(q, claims, put))
    assert delivered == episodes == len(provider.stored), (delivered, len(provider.stored))
    router.close()
    q.close()
    shares = "  ".join(f"{name} {seconds * 1e6 / episodes:6.1f}" for name, seconds in spent.items())
    print(f"delivery steps, CPU us per episode ({episodes} episodes, batches of {batch}): {shares}")


def bench_single(root: Path, episodes: int, *, append_only: bool = False, sessions: int = 20) -> None:
    """``--only single``: append, then deliver into SQLite, all on this thread (see the module doc)."""
    from paxm_core.api.provider_config import ProviderConfig
    from paxm_core.capture.batch import deliver_batch
    from paxm_core.plugins import get_plugin_manager

    spec = get_plugin_manager().provider_type("sqlite")
    provider = spec.factory("sqlite", ProviderConfig(type="sqlite", enabled=True, path=str(root / "single.sqlite")))
    provider.health(Deadline.after(60.0))
    q = CaptureQueue(root / "single-queue.sqlite", routes={"default": ["sqlite"]})
    router = daemon_router({"sqlite": provider}, root / "sequences-single.sqlite")
    events = turn_events("s", episodes, sessions)
    started = time.process_time()
    for first in range(0, len(events), 512):
        q.append_many(events[first : first + 512])
    spent = {"append_many": time.process_time() - started}
    if not append_only:
        claim = put = 0.0
        delivered = 0
        while True:
            started = time.process_time()
            claims, _ = q.claim_batch("sqlite", limit=256)
            claim += time.process_time() - started
            if not claims:
                break
            started = time.process_time()
            delivered += len(deliver_batch(q, claims, lambda items: router.put_to_provider("sqlite", items, 30.0)))
            put += time.process_time() - started
        assert delivered == episodes, delivered
        spent.update({"claim_batch": claim, "deliver_batch (put_batch + complete_many)": put})
    router.close()
    q.close()
    # (--episodes 0 runs the setup alone: the baseline of a callgrind count)
    shares = "  ".join(f"{name} {seconds * 1e6 / max(1, episodes):6.1f}" for name, seconds in spent.items())
    print(f"one-thread delivery into SQLite, CPU us per episode ({episodes} episodes): {shares}")


#: ``due_providers`` before it probed the due index per provider: a walk of the live backlog
_OLD_DUE = (
    "SELECT DISTINCT provider FROM capture_deliveries INDEXED BY capture_deliveries_heads"
    " WHERE state IN ('pending', 'retry', 'delivering') AND state != 'delivering' ORDER BY provider"
)


def bench_loop(root: Path, pending: int, sessions: int = 20) -> None:
    """What the worker's loop thread asks after every batch, with ``pending`` episodes owed.

    ``due_providers`` (one index probe per provider) against the backlog walk it replaced
    (``_OLD_DUE``, the same answer), CPU microseconds per call, medians of 50.
    """
    q = CaptureQueue(root / "loop.sqlite", routes={"default": ["sqlite"]})
    events = turn_events("l", pending, sessions)
    for first in range(0, len(events), 1024):
        q.append_many(events[first : first + 1024])
    conn = sqlite3.connect(q.path)
    assert q.due_providers() == [r[0] for r in conn.execute(_OLD_DUE)] == ["sqlite"]

    def cpu(fn: Callable[[], object]) -> list[float]:
        out = []
        for _ in range(50):
            started = time.process_time()
            fn()
            out.append(time.process_time() - started)
        return out

    new = cpu(q.due_providers)
    old = cpu(lambda: conn.execute(_OLD_DUE).fetchall())
    conn.close()
    q.close()
    ratio = statistics.median(old) / max(statistics.median(new), 1e-9)
    print(
        f"due_providers, {pending} episodes owed: {statistics.median(new) * 1e6:8.1f} us CPU"
        f"  | backlog walk (before) {statistics.median(old) * 1e6:8.1f} us  ratio {ratio:6.0f}x"
    )
    record(
        f"delivery loop: due_providers with {pending} episodes owed (asked after every batch)",
        statistics.median(new) * 1e6,
        "us CPU",
        f"the backlog walk it replaced: {statistics.median(old) * 1e6:.0f} us",
        "independent of the backlog",
        None,
    )


def bench_floor(root: Path, episodes: int, sessions: int = 20, batch: int = 256) -> None:
    """The floor under delivery into SQLite: only the SQL it cannot skip, no Python around it.

    Two parts, CPU microseconds per episode (medians of 3, each on fresh files):

    * ``queue statements``: per batch, the claim's reads (the due deliveries, the envelopes,
      the event rows), the lease ``UPDATE`` by rowid, ``COMMIT``; then the completion
      ``UPDATE`` by rowid, the episode-state refresh, ``COMMIT``: what ``claim_batch`` and
      ``complete_many`` run, without verifying, rendering or any object;
    * ``SQLite write``: the provider's own rows for these items (read back from a database the
      provider wrote), ``executemany`` of its upsert in transactions of ``batch``, into a fresh
      database of the same schema (the FTS5 and term-index triggers run as in a real write).

    Their sum is what one core needs per episode before any Python.
    """
    from paxm_core.api.provider_config import ProviderConfig
    from paxm_core.plugins import get_plugin_manager

    spec = get_plugin_manager().provider_type("sqlite")
    from paxm_provider_sqlite.provider import _UPSERT

    queue_cpu: list[float] = []
    write_cpu: list[float] = []
    for run in range(3):
        q = CaptureQueue(root / f"floor-{run}.sqlite", routes={"default": ["sqlite"]})
        events = turn_events(f"f{run}_", episodes, sessions)
        for first in range(0, len(events), 1024):
            q.append_many(events[first : first + 1024])
        claims, _ = q.claim_batch("sqlite", limit=episodes)
        items = [c.items[0] for c in claims]
        q.release_many(claims)
        q.close()
        conn = sqlite3.connect(root / f"floor-{run}.sqlite", isolation_level=None)
        started = time.process_time()
        while True:
            conn.execute("BEGIN IMMEDIATE")
            due = conn.execute(
                "SELECT d.episode_id, d.rowid FROM capture_deliveries d INDEXED BY capture_deliveries_due"
                " WHERE d.provider = 'sqlite' AND d.state IN ('pending', 'retry')"
                " ORDER BY d.episode_created_at, d.session_key, d.first_sequence LIMIT ?",
                (batch,),
            ).fetchall()
            if not due:
                conn.execute("COMMIT")
                break
            ids = [r[0] for r in due]
            marks = ",".join("?" * len(ids))
            conn.execute(f"SELECT payload_json, payload_hash FROM capture_episodes WHERE episode_id IN ({marks})", ids)
            conn.execute(
                "SELECT episode_id, payload_json, payload_hash, created_at FROM capture_events"
                f" WHERE episode_id IN ({marks}) ORDER BY episode_id, sequence",
                ids,
            ).fetchall()
            rowids = [r[1] for r in due]
            conn.execute(
                "UPDATE capture_deliveries SET state = 'delivering', attempts = attempts + 1, lease_owner = 'x',"
                f" last_attempt_at = 't', first_attempt_at = 't' WHERE rowid IN ({marks})",
                rowids,
            )
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "UPDATE capture_deliveries SET state = 'delivered', provider_ref = episode_id, delivered_at = 't',"
                " last_error = '', lease_owner = '', next_attempt_at = '' WHERE rowid = ? AND state = 'delivering'",
                [(r,) for r in rowids],
            )
            CaptureQueue._refresh_episodes(conn, ids)
            conn.execute("COMMIT")
        queue_cpu.append(time.process_time() - started)
        conn.close()
        source: Any = spec.factory(
            "src", ProviderConfig(type="sqlite", enabled=True, path=str(root / f"floor-src-{run}.sqlite"))
        )
        source.put_batch(items, Deadline.after(60.0))
        source.close()
        target: Any = spec.factory(
            "dst", ProviderConfig(type="sqlite", enabled=True, path=str(root / f"floor-dst-{run}.sqlite"))
        )
        target.health(Deadline.after(60.0))
        target.close()
        with sqlite3.connect(root / f"floor-src-{run}.sqlite") as src:
            rows = src.execute(
                "SELECT id, text, source, metadata_json, created_at, updated_at, tier, expires_at, terms, extras,"
                " nterms FROM memories ORDER BY rowid"
            ).fetchall()
        assert len(rows) == episodes, len(rows)
        dst = sqlite3.connect(root / f"floor-dst-{run}.sqlite", isolation_level=None)
        dst.execute("PRAGMA journal_mode = WAL")
        started = time.process_time()
        for first in range(0, len(rows), batch):
            dst.execute("BEGIN IMMEDIATE")
            dst.executemany(_UPSERT, rows[first : first + batch])
            dst.execute("COMMIT")
        write_cpu.append(time.process_time() - started)
        dst.close()
    queue_us = statistics.median(queue_cpu) * 1e6 / episodes
    write_us = statistics.median(write_cpu) * 1e6 / episodes
    total = queue_us + write_us
    print(
        f"delivery floor, {episodes} episodes, CPU us per episode: queue statements {queue_us:6.1f}"
        f"  SQLite write (executemany of the provider's rows) {write_us:6.1f}  sum {total:6.1f}"
        f"  -> {1e6 / total:7.0f} episodes per CPU-second ({2e6 / total:7.0f}/s if two cores overlapped perfectly)"
    )
    record(
        f"queue delivery into SQLite: the SQL floor ({episodes} episodes, no Python around it)",
        1e6 / total,
        "episodes per CPU-second",
        f"queue statements {queue_us:.0f} us + SQLite write {write_us:.0f} us per episode",
        ">= 1,000 episodes/s",
        None,
    )


def _all_items(q: CaptureQueue, provider: str, episodes: int) -> list[Any]:
    # re-read every delivered episode's items through the claim verification path (claim()
    # takes only each session's head, which made the old baseline time 20 puts, not all)
    q.retry_dead()
    with sqlite3.connect(q.path) as conn:
        conn.execute("UPDATE capture_deliveries SET state = 'pending', attempts = 0")
    claims, _ = q.claim_batch(provider, limit=episodes)
    return claims


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument(
        "--only",
        choices=["all", "delivery", "phases", "loop", "floor", "single"],
        default="all",
        help="'delivery': only the batched deliveries (in-memory put_batch, then SQLite); 'phases': only the"
        " per-step CPU of batched delivery on one thread (both for interleaved A/B runs); 'loop': the worker"
        " loop's due_providers against the backlog walk it replaced; 'floor': only the SQL delivery into SQLite"
        " cannot skip (queue statements + executemany of the provider's rows), with no Python around it",
    )
    parser.add_argument("--append-only", action="store_true", help="'single': stop after appending")
    parser.add_argument(
        "--attributed",
        action="store_true",
        help="events carry a hook capture's tier, attribution and metadata (default: bare text, as in"
        " the figures before session 15)",
    )
    args = parser.parse_args()
    global ATTRIBUTED
    ATTRIBUTED = args.attributed
    full = args.only == "all"
    with tempfile.TemporaryDirectory(prefix="paxm-queue-bench-") as tmp:
        root = Path(tmp)
        if args.only == "phases":
            bench_phases(root, max(args.episodes, 500))
            return
        if args.only == "single":
            bench_single(root, args.episodes, append_only=args.append_only)
            return
        if args.only == "loop":
            bench_loop(root, max(args.episodes, 100))
            return
        if args.only == "floor":
            bench_floor(root, max(args.episodes, 100))
            return
        if full:
            bench_append(root, args.events)
            bench_phases(root, max(args.episodes, 500))
            bench_loop(root, max(args.episodes, 100))
            bench_floor(root, max(args.episodes, 100))
            bench_delivery(root, "memory", MemoryProvider, args.episodes, 20)
        alone = bench_delivery(root, "memory put_batch", BatchMemoryProvider, args.episodes, 20)
        record(
            f"queue delivery into SQLite: the queue+worker alone ({args.episodes} episodes, in-memory put_batch)",
            alone,
            "episodes/s",
            "a provider write that costs ~nothing: the queue's own ceiling",
            ">= 1,000 episodes/s",
            None,
        )
        from paxm_core.api.provider_config import ProviderConfig
        from paxm_core.plugins import get_plugin_manager

        try:
            spec = get_plugin_manager().provider_type("sqlite")
        except Exception:  # provider plugin not installed: the in-memory numbers still stand
            return

        def make_sqlite(name: str) -> Any:
            return spec.factory(name, ProviderConfig(type="sqlite", enabled=True, path=str(root / f"{name}.sqlite")))

        batched = bench_delivery(root, "sqlite provider", make_sqlite, args.episodes, 20)
        record(
            f"queue delivery into SQLite ({args.episodes} episodes)",
            batched,
            "episodes/s",
            "the daemon's path: DeliveryWorker, Router, the real SQLite provider",
            ">= 1,000 episodes/s",
            batched >= 1000,
        )
        if not full:
            return
        # the same run one episode per write (batch_size=1: the path before batching, and
        # still the path of providers without put_batch)
        single = bench_delivery(root, "sqlite 1-by-1", make_sqlite, args.episodes, 20, batch_size=1)
        print(f"batched / one-by-one delivery into SQLite: {batched / single:5.1f}x")


if __name__ == "__main__":
    main()
