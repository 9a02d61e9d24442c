"""The daemon's reused worker threads (``paxm_core.passive.workers``)."""

from __future__ import annotations

import threading
import time

from paxm_core.passive.workers import Workers


def _wait_idle(workers: Workers) -> None:
    deadline = time.monotonic() + 10
    while workers._idle == 0 and time.monotonic() < deadline:  # the last call has returned
        time.sleep(0.001)


def test_an_idle_thread_is_reused_and_a_failing_call_does_not_kill_it() -> None:
    workers = Workers("t")
    seen: list[str] = []
    done = threading.Event()

    def fail() -> None:
        seen.append(threading.current_thread().name)
        done.set()
        raise RuntimeError("boom")

    def note() -> None:
        seen.append(threading.current_thread().name)
        done.set()

    workers.run(fail)
    assert done.wait(10)
    for _ in range(3):
        _wait_idle(workers)
        done.clear()
        workers.run(note)
        assert done.wait(10)
    assert set(seen) == {"t_1"}  # one thread served every call, after a call that raised
    assert all(t.daemon for t in threading.enumerate() if t.name == "t_1")


def test_a_busy_thread_gets_company_so_calls_never_wait_for_each_other() -> None:
    workers = Workers("busy")
    release = threading.Event()
    second = threading.Event()
    workers.run(lambda: release.wait(10))  # stuck, as a recall in a hung provider is
    workers.run(second.set)
    assert second.wait(10)  # ran on a second thread meanwhile
    release.set()
