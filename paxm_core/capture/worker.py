"""The background delivery worker: leases due deliveries and sends them through the router.

One loop thread claims work; each claimed batch starts a stream on its own daemon thread
(:func:`~paxm_core.capture.batch.deliver_stream`: write, record, claim the next) that holds
one of its provider's concurrency slots, so a provider that hangs holds only its own slots.
Writes go through the router's ``put_to_provider`` (the write pipeline of ``remember``).  A
provider with ``put_batch`` gets up to ``batch_size`` episodes per write, the others one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from paxm_core.api.protocols import CAP_LARGE_BATCHES, CAP_PUT_BATCH
from paxm_core.api.timefmt import utcnow
from paxm_core.api.types import MemoryItem, MemoryRef
from paxm_core.capture.batch import DEFAULT_DELIVERY_BATCH, LARGE_DELIVERY_BATCH, deliver_batch, deliver_stream
from paxm_core.capture.model import DeliveryClaim, DeliveryOutcome, FlushReport, QueueStatus
from paxm_core.capture.queue import CaptureQueue

if TYPE_CHECKING:
    from paxm_core.config.model import CaptureQueueConfig, WriteProfileConfig

__all__ = ["DEFAULT_DELIVERY_TIMEOUT", "DeliveryRouter", "DeliveryWorker", "provider_concurrency"]

DEFAULT_DELIVERY_TIMEOUT = 30.0
DEFAULT_MAX_EPISODE_AGE = 60.0
#: delivered episodes older than this are pruned from the queue file (hourly)
DEFAULT_RETENTION = 7 * 24 * 3600.0
PRUNE_INTERVAL = 3600.0
CLEANUP_LIMIT = 500
TELEMETRY_ERROR_CHARS = 240


class DeliveryRouter(Protocol):
    """What the worker needs from :class:`paxm_core.router.Router`."""

    def put_to_provider(self, provider: str, items: list[MemoryItem], timeout: float) -> list[MemoryRef]:
        """Write ``items`` to exactly ``provider`` (forced required); raise on failure."""
        ...


class _Telemetry(Protocol):
    def record(self, event: dict[str, object]) -> object: ...


def provider_concurrency(overrides: Mapping[str, int] | None, provider: str) -> int:
    """Concurrency for ``provider``: its own override, else ``default``; sqlite 1, others 4."""
    overrides = overrides or {}
    value = overrides.get(provider)
    if value is None or value <= 0:
        value = 1 if provider == "sqlite" else overrides.get("default") or 4
    return max(1, int(value))


def _left_after_flush(status: QueueStatus, seal_open: bool) -> tuple[int, int]:
    """``(remaining, live)``: what a flush leaves owed, and the open events of live turns it leaves whole."""
    live = 0 if seal_open else status.open_events
    return status.undelivered - status.inbox.get("pending", 0) - live, live


class DeliveryWorker:
    """Deliver sealed episodes in the background; see ``docs/capture-queue.md``.

    :param queue: the capture queue (the caller owns and closes it).
    :param router: anything with ``put_to_provider`` (the real :class:`~paxm_core.router.Router`).
    :param config: a ``CaptureQueueConfig`` (``max_episode_age``, ``provider_concurrency``).
    :param write_profiles: ``Config.write_profiles``; route timeouts come from here (else 30 s).
    :param telemetry: object with ``record(dict)``; gets upstream's ``hook_delivery`` events.
    :param tick: seconds between expiry checks.
    :param cleanup_interval: minimum seconds between expired-memory cleanups after deliveries.
    :param retention: seconds a delivered episode stays in the queue file (``None``: forever).
    :param batch_size: episodes per write to a provider with ``put_batch`` (``None``: each
        provider's own, :meth:`batch_for`).
    """

    def __init__(
        self,
        queue: CaptureQueue,
        router: DeliveryRouter,
        config: CaptureQueueConfig | None = None,
        write_profiles: Mapping[str, WriteProfileConfig] | None = None,
        *,
        telemetry: _Telemetry | None = None,
        tick: float = 1.0,
        cleanup_interval: float = 10.0,
        retention: float | None = DEFAULT_RETENTION,
        batch_size: int | None = None,
    ) -> None:
        self.queue = queue
        #: the batch size the caller fixed for every provider (``None``: each provider's own)
        self.batch_size = None if batch_size is None else max(1, int(batch_size))
        self._batch_sizes: dict[str, int] = {}
        self.router = router
        self.max_episode_age = float(config and config.max_episode_age or DEFAULT_MAX_EPISODE_AGE)
        self._concurrency: Mapping[str, int] = config and config.provider_concurrency or {}
        self._write_profiles = write_profiles or {}
        self._telemetry = telemetry
        self._tick = tick
        self._retention = retention
        self._cond = threading.Condition()
        self._inflight: dict[str, int] = {}
        # provider -> monotonic time until which the loop does not claim for it: its last claim
        # found nothing while a stream of it was running (see _claim)
        self._drained: dict[str, float] = {}
        self._wake = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._counts = {"delivered": 0, "retry": 0, "dead": 0}
        self.errors: list[str] = []
        self._cleanup = _CleanupScheduler(router, cleanup_interval, self._report_issue)

    # -- public API ----------------------------------------------------------------------

    def concurrency(self, provider: str) -> int:
        """The configured concurrency for ``provider``."""
        return provider_concurrency(self._concurrency, provider)

    def start(self) -> DeliveryWorker:
        """Start the background loop (idempotent)."""
        with self._cond:
            previous = self._thread if self._stopping else None
        if previous is not None:
            previous.join(self._tick + 5.0)  # a stopped loop finishes its current step first
        with self._cond:
            if self._thread is not None and not self._thread.is_alive():
                self._thread = None
            if self._thread is None:
                self._stopping = False
                self._thread = threading.Thread(target=self._loop, name="paxm-capture-delivery", daemon=True)
                self._thread.start()
        return self

    def notify(self) -> None:
        """Wake the loop now (call after an append)."""
        with self._cond:
            self._wake = True
            self._drained.clear()  # new work: a further stream may find some
            self._cond.notify_all()

    def run_once(self) -> list[DeliveryOutcome]:
        """Claim what is due (each provider up to its free slots of batches) and deliver it on this thread."""
        batches, outcomes = self._claim()
        for provider, claims in batches:
            started = time.monotonic()
            try:
                done = deliver_batch(self.queue, claims, self._put(provider, claims))
                outcomes.extend(self._record_batch(done, claims, time.monotonic() - started))
            finally:
                self._free_slot(provider)
        return outcomes

    def flush(
        self,
        timeout: float = 35.0,
        *,
        seal_open: bool = False,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> FlushReport:
        """Deliver everything sealed and wait until nothing is owed or ``timeout`` passes.

        A live turn (open events younger than ``max_episode_age``) is left whole: its turn end
        seals it, so a flush never splits a prompt from its answer.  Open events older than
        that are sealed (incomplete) first, as the worker's own tick would.  ``seal_open``
        seals every open turn (daemon shutdown, or an operator's ``--seal-open``).  Waiting
        retries are made due at once, so everything is tried at least once more.
        ``on_progress(done, total)`` is called while waiting (total = what was owed at the start).
        """
        deadline = time.monotonic() + timeout
        before = dict(self._counts)
        sealed = self.queue.seal_all() if seal_open else self.queue.seal_expired(self.max_episode_age)
        self.queue.make_due()
        own_loop = self._thread is None
        if own_loop:
            self.start()
        self.notify()
        timed_out = False
        total = self.queue.owed(include_open=seal_open) if on_progress is not None else 0
        while True:
            # owed() is the cheap poll; the status read confirms it, so a turn that ended
            # meanwhile (a new sealed episode) is waited for rather than reported as left over
            owed = self.queue.owed(include_open=seal_open)
            if on_progress is not None:
                total = max(total, owed)
                on_progress(total - owed, total)
            if owed == 0:
                status = self.queue.status(dead_limit=0)
                if _left_after_flush(status, seal_open)[0] <= 0:
                    break
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            with self._cond:
                self._cond.wait(min(0.05, left))
        self._cleanup.schedule(force=True)
        if own_loop:
            self.stop(timeout=max(0.5, min(5.0, deadline - time.monotonic())))
        status = self.queue.status(dead_limit=0) if timed_out else status
        remaining, live = _left_after_flush(status, seal_open)
        return FlushReport(
            sealed=sealed,
            delivered=self._counts["delivered"] - before["delivered"],
            failed=self._counts["retry"] - before["retry"],
            dead=self._counts["dead"] - before["dead"],
            remaining=remaining,
            timed_out=timed_out,
            dead_total=status.deliveries.get("dead", 0) + len(status.dead_episodes),
            live=live,
        )

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and wait up to ``timeout`` for in-flight deliveries and cleanup.

        A delivery still hanging afterwards keeps its lease; the next queue opened after this
        one is closed returns it to ``retry``.
        """
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            thread = self._thread
        deadline = time.monotonic() + timeout
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._cond:
            while any(self._inflight.values()) and time.monotonic() < deadline:
                self._cond.wait(max(0.0, min(0.05, deadline - time.monotonic())))
            if thread is None or not thread.is_alive():
                self._thread = None  # else start() waits for it, so two loops never run
        self._cleanup.drain(max(0.0, deadline - time.monotonic()))

    @property
    def cleanup_runs(self) -> int:
        """How many expired-memory cleanups ran (requests coalesce)."""
        return self._cleanup.runs

    # -- internals -----------------------------------------------------------------------

    def _loop(self) -> None:
        next_seal = 0.0
        next_prune = time.monotonic() + self._tick  # not at startup: let delivery go first
        while True:
            with self._cond:
                if self._stopping:
                    return
                self._wake = False
            try:
                if time.monotonic() >= next_seal:
                    self.queue.seal_expired(self.max_episode_age)
                    next_seal = time.monotonic() + self._tick
                for provider, claims in self._claim()[0]:  # a stream per batch, on its own thread
                    threading.Thread(
                        target=self._deliver_many, args=(provider, claims), name="paxm-delivery", daemon=True
                    ).start()
                if self._retention is not None and time.monotonic() >= next_prune:
                    next_prune = time.monotonic() + PRUNE_INTERVAL
                    self.queue.prune(self._retention)
                due = self.queue.next_due_in()
            except Exception as exc:  # a DB error must not kill the loop; report and retry
                self._report_issue("delivery_worker_error", exc)
                with suppress(Exception):
                    self.queue.recover_delivering()
                due = None
            wait = self._tick if due is None else min(self._tick, max(due, 0.005))
            with self._cond:
                if not self._wake and not self._stopping:
                    self._cond.wait(wait)

    def batch_for(self, provider: str) -> int:
        """Episodes per write to ``provider``: 1 without ``put_batch`` (decided once per provider)."""
        known = self._batch_sizes.get(provider)
        if known is None:
            capabilities = getattr(self.router, "capabilities", None)
            try:
                declared = capabilities(provider) if callable(capabilities) else frozenset()
            except Exception:  # unknown provider: the one-by-one path reports it properly
                declared = frozenset()
            if CAP_PUT_BATCH not in declared:
                known = 1
            elif self.batch_size is not None:
                known = self.batch_size
            else:
                known = LARGE_DELIVERY_BATCH if CAP_LARGE_BATCHES in declared else DEFAULT_DELIVERY_BATCH
            self._batch_sizes[provider] = known
        return known

    def _claim(self) -> tuple[list[tuple[str, list[DeliveryClaim]]], list[DeliveryOutcome]]:
        """``(batches, quarantined)``: a batch, holding a slot, for each free slot of every provider with due work."""
        batches: list[tuple[str, list[DeliveryClaim]]] = []
        quarantined: list[DeliveryOutcome] = []
        with self._cond:
            now = time.monotonic()
            for provider in self.queue.due_providers():
                while self._inflight.get(provider, 0) < self.concurrency(provider):
                    running = self._inflight.get(provider, 0) > 0
                    # a running stream claims its provider's next batch itself: once a claim here
                    # found nothing beside it, the loop waits for new work, the stream's end or a tick
                    if running and now < self._drained.get(provider, 0.0):
                        break
                    claims, dead = self.queue.claim_batch(provider, limit=self.batch_for(provider))
                    quarantined.extend(dead)
                    if not claims:
                        if running:
                            self._drained[provider] = now + self._tick
                        break
                    self._drained.pop(provider, None)
                    self._inflight[provider] = self._inflight.get(provider, 0) + 1
                    batches.append((provider, claims))
        for outcome in quarantined:
            self._emit(outcome)
        return batches, quarantined

    def _free_slot(self, provider: str) -> None:
        with self._cond:
            self._inflight[provider] -= 1
            self._drained.pop(provider, None)
            self._wake = True
            self._cond.notify_all()

    def _put(self, provider: str, batch: list[DeliveryClaim]) -> Callable[[list[MemoryItem]], list[MemoryRef]]:
        """The write of ``batch`` to ``provider``, with the longest of its routes' timeouts."""
        timeout = max(self._timeout_for(claim) for claim in batch)
        return lambda items: self.router.put_to_provider(provider, items, timeout)

    def _deliver_many(self, provider: str, claims: list[DeliveryClaim]) -> None:
        """A stream's thread: deliver ``claims`` and what follows them, then free the slot."""
        done: set[str] = set()  # episodes with a recorded outcome
        started = [time.monotonic()]
        current: list[DeliveryClaim] = list(claims)

        def writer(batch: list[DeliveryClaim]) -> Callable[[list[MemoryItem]], list[MemoryRef]]:
            current[:] = batch
            started[0] = time.monotonic()
            return self._put(provider, batch)

        def report(outcomes: list[DeliveryOutcome], batch: list[DeliveryClaim]) -> None:
            duration = time.monotonic() - started[0] if batch else 0.0
            done.update(o.episode_id for o in self._record_batch(outcomes, batch, duration))

        try:
            deliver_stream(
                self.queue,
                provider,
                writer,
                report,
                limit=self.batch_for(provider),
                first=claims,
                stopping=lambda: self._stopping,
            )
        except Exception as exc:  # queue closed or DB error: the leases stay, recovery retries them
            self._report_issue("delivery_worker_error", exc)
            left = [c for c in current if c.episode_id not in done]
            outcomes = [DeliveryOutcome(c.episode_id, c.provider, c.session_key, c.attempt, "delivering") for c in left]
            self._record_batch(outcomes, left, time.monotonic() - started[0])
        self._free_slot(provider)

    def _record_batch(
        self, outcomes: list[DeliveryOutcome], batch: list[DeliveryClaim], duration: float
    ) -> list[DeliveryOutcome]:
        finished = time.time()
        claim_of = {claim.episode_id: claim for claim in batch}
        final: list[DeliveryOutcome] = []
        for outcome in outcomes:
            claim = claim_of.get(outcome.episode_id)
            latencies = [max(0.0, finished - t) for t in claim.capture_times] if claim is not None else []
            final.append(
                replace(
                    outcome,
                    # the write was shared: each episode reports its share of it
                    duration=duration / max(1, len(outcomes)),
                    passive_latency_total=sum(latencies),
                    passive_samples=len(latencies),
                )
            )
        with self._cond:
            for outcome in final:
                if outcome.state in self._counts:
                    self._counts[outcome.state] += 1
            self._wake = True
            self._cond.notify_all()
        for outcome in final:
            self._emit(outcome)
        if any(o.state == "delivered" for o in final):
            self._cleanup.schedule()
        return final

    def _timeout_for(self, claim: DeliveryClaim) -> float:
        timeouts = [
            float(route.timeout)
            for name in claim.profiles
            if name in self._write_profiles
            for route in self._write_profiles[name].providers
            if route.name == claim.provider and route.timeout
        ]
        return max(timeouts) if timeouts else DEFAULT_DELIVERY_TIMEOUT

    def _emit(self, outcome: DeliveryOutcome) -> None:
        if self._telemetry is None:
            return
        event: dict[str, object] = {
            # stamped here: the daemon's telemetry thread writes events in batches, later
            "time": utcnow(),
            "kind": "hook_delivery",
            "source": "capture_queue",
            "hook_event": "delivery_dead" if outcome.state == "dead" else "delivery",
            "success": outcome.state == "delivered",
            "episode_id": outcome.episode_id,
            "session_key": outcome.session_key,
            "provider": outcome.provider,
            "duration_ms": int(outcome.duration * 1000),
            "provider_duration_ms": int(outcome.duration * 1000),
            "passive_write_latency_total_ms": int(outcome.passive_latency_total * 1000),
            "passive_write_samples": outcome.passive_samples,
        }
        if outcome.ref:
            event["provider_refs"] = {outcome.provider: 1}
        if outcome.error:
            event["error"] = outcome.error[:TELEMETRY_ERROR_CHARS]
        self._record(event)

    def _report_issue(self, hook_event: str, exc: BaseException) -> None:
        message = (str(exc) or type(exc).__name__)[:TELEMETRY_ERROR_CHARS]
        self.errors.append(f"{hook_event}: {message}")
        del self.errors[:-20]
        self._record(
            {
                "kind": "hook_delivery",
                "source": "capture_queue",
                "hook_event": hook_event,
                "success": False,
                "error": message,
            }
        )

    def _record(self, event: dict[str, object]) -> None:
        if self._telemetry is not None:
            with suppress(Exception):  # telemetry never fails a delivery
                self._telemetry.record(event)


class _CleanupScheduler:
    """Runs ``router.cleanup_expired`` on one thread; requests made meanwhile coalesce into one."""

    def __init__(self, router: object, interval: float, report: Callable[[str, BaseException], None]) -> None:
        self._fn = getattr(router, "cleanup_expired", None)
        self._interval = interval
        self._report = report
        self._lock = threading.Lock()
        self._pending = False
        self._thread: threading.Thread | None = None
        self._last = -float("inf")
        self.runs = 0

    def schedule(self, *, force: bool = False) -> None:
        if self._fn is None:
            return
        with self._lock:
            if not force and time.monotonic() - self._last < self._interval:
                return
            self._pending = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="paxm-cleanup", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        assert self._fn is not None
        while True:
            with self._lock:
                if not self._pending:
                    self._thread = None
                    return
                self._pending = False
                self._last = time.monotonic()
                self.runs += 1
            try:
                self._fn(CLEANUP_LIMIT)
            except Exception as exc:
                self._report("cleanup_worker_error", exc)

    def drain(self, timeout: float) -> None:
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
