"""The daemon's thread pool (``paxm_core.passive.workers``): results, errors, timeouts, cancel, shutdown."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest

from paxm_core.passive.workers import JobCancelled, WorkerPool


@contextlib.contextmanager
def _held_pool(size: int, name: str = "t") -> Iterator[tuple[WorkerPool, threading.Event]]:
    """A pool and an event its jobs wait on; at the end the event is set and the pool shut down."""
    pool = WorkerPool(size, name)
    release = threading.Event()
    try:
        yield pool, release
    finally:
        release.set()
        pool.shutdown()


def test_a_job_returns_its_result_and_raises_its_exception() -> None:
    pool = WorkerPool(2, "t")
    try:
        assert pool.submit(lambda a, *, b: a + b, 2, b=3).result(5) == 5
        job = pool.submit(int, "not a number")
        with pytest.raises(ValueError, match="invalid literal"):
            job.result(5)
        assert job.done() and not job.cancelled()
    finally:
        pool.shutdown()


def test_result_times_out_while_the_job_runs_then_returns_once_it_finishes() -> None:
    with _held_pool(1) as (pool, release):
        job = pool.submit(lambda: release.wait(10) and "done")
        with pytest.raises(TimeoutError):
            job.result(0.05)
        assert not job.cancel()  # running: too late to cancel
        release.set()
        assert job.result(5) == "done"


def test_a_pending_job_can_be_cancelled_and_never_runs() -> None:
    ran: list[str] = []
    with _held_pool(1) as (pool, release):
        busy = pool.submit(release.wait, 10)
        queued = pool.submit(ran.append, "queued")
        assert queued.cancel() and queued.cancelled() and queued.done()
        with pytest.raises(JobCancelled):
            queued.result(0)
        release.set()
        assert busy.result(5) is True
        assert pool.submit(ran.append, "later").result(5) is None
        assert ran == ["later"]


def test_threads_start_on_demand_up_to_the_limit_and_are_daemon_threads() -> None:
    started = threading.Barrier(4)
    with _held_pool(3, "paxm-test-pool") as (pool, release):
        assert pool.submit(lambda: threading.current_thread().name).result(5) == "paxm-test-pool_0"
        # an idle worker takes the next job: no second thread for sequential work
        assert pool.submit(lambda: threading.current_thread().name).result(5) == "paxm-test-pool_0"
        jobs = [pool.submit(lambda: (started.wait(5), release.wait(10))) for _ in range(3)]
        started.wait(5)  # three jobs run at once: three threads
        extra = pool.submit(lambda: threading.current_thread().daemon)
        with pytest.raises(TimeoutError):
            extra.result(0.05)  # the fourth waits: the limit is three
        release.set()
        assert extra.result(5) is True
        for job in jobs:
            job.result(5)
        names = {t.name for t in threading.enumerate() if t.name.startswith("paxm-test-pool_")}
        assert names == {"paxm-test-pool_0", "paxm-test-pool_1", "paxm-test-pool_2"}


def test_shutdown_cancels_what_has_not_started_does_not_wait_and_refuses_new_work() -> None:
    pool = WorkerPool(1, "t")
    release = threading.Event()
    running = threading.Event()
    try:

        def hold() -> bool:
            running.set()
            return release.wait(10)

        busy = pool.submit(hold)
        running.wait(5)
        queued = pool.submit(lambda: "never")
        pool.shutdown(cancel_pending=True)  # returns although busy still runs
        assert queued.cancelled()
        assert not busy.done()
        with pytest.raises(RuntimeError, match="after shutdown"):
            pool.submit(lambda: None)
        release.set()
        assert busy.result(5) is True
    finally:
        release.set()


def test_shutdown_without_cancel_lets_queued_jobs_run() -> None:
    pool = WorkerPool(1, "t")
    release = threading.Event()
    busy = pool.submit(release.wait, 10)
    queued = pool.submit(lambda: "ran")
    pool.shutdown(cancel_pending=False)
    release.set()
    assert busy.result(5) is True
    assert queued.result(5) == "ran"


def test_max_workers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="greater than 0"):
        WorkerPool(0, "t")
