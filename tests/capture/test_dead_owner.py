"""A lease or run whose owner died is recovered even when the owner is a zombie or its pid is reused.

In a container whose PID 1 does not reap orphans, a SIGKILLed hook daemon stays a zombie, and
``kill(pid, 0)`` still succeeds for it: before :mod:`paxm_core.processes`, its leased deliveries
were never handed back and a flush waited for them until it timed out.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _capture_helpers import event

from paxm_core.capture import CaptureQueue
from paxm_core.processes import pid_alive, start_time

LINUX = sys.platform.startswith("linux")


def _zombie() -> subprocess.Popen[bytes]:
    """A child that has exited and that nobody has waited for."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/stat", "rb") as handle:
            if handle.read().rpartition(b")")[2].split()[0] == b"Z":
                return child
        time.sleep(0.01)
    raise AssertionError("the child did not exit")


def test_a_running_process_is_alive_and_a_reaped_one_is_not() -> None:
    assert pid_alive(os.getpid()) and pid_alive(os.getpid(), start_time())
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert not pid_alive(int(done.stdout))
    assert not pid_alive(0) and not pid_alive(-1)


@pytest.mark.skipif(not LINUX, reason="zombies and start times are read from /proc")
def test_a_zombie_and_a_reused_pid_are_not_alive() -> None:
    child = _zombie()
    try:
        os.kill(child.pid, 0)  # what the old check asked: the zombie still "exists"
        assert not pid_alive(child.pid)
    finally:
        child.wait()
    assert start_time() and start_time().isdigit()
    # this pid with another start time is some other process that got the owner's pid
    assert not pid_alive(os.getpid(), str(int(start_time()) + 1))


@pytest.mark.skipif(not LINUX, reason="zombies are read from /proc")
def test_a_zombie_owners_lease_returns_to_retry(tmp_path: Path) -> None:
    path = tmp_path / "queue.sqlite"
    with CaptureQueue(path, routes={"default": ["sqlite"]}) as queue:
        queue.append_many([event("u1", "s1", "prompt"), event("a1", "s1", "answer", terminal=True)])
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, signal, sys\n"
            "from paxm_core.capture import CaptureQueue\n"
            "q = CaptureQueue(sys.argv[1], routes={'default': ['sqlite']})\n"
            "claims, _ = q.claim_batch('sqlite')\n"
            "assert len(claims) == 1\n"
            "os.kill(os.getpid(), signal.SIGKILL)  # mid-delivery, the lease still held\n",
            str(path),
        ]
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(f"/proc/{owner.pid}/stat", "rb") as handle:
                if handle.read().rpartition(b")")[2].split()[0] == b"Z":
                    break
            time.sleep(0.01)
        with sqlite3.connect(path) as conn:
            ((state, lease),) = conn.execute("SELECT state, lease_owner FROM capture_deliveries").fetchall()
        assert state == "delivering" and lease.startswith(f"{owner.pid}:")
        # the owner is a zombie (this test has not waited for it): opening the queue recovers it
        with CaptureQueue(path, routes={"default": ["sqlite"]}) as queue:
            claims, _ = queue.claim_batch("sqlite")
            assert [c.items[0].text for c in claims] == ["prompt\n\nanswer"]
    finally:
        owner.wait()
        assert owner.returncode == -signal.SIGKILL


def test_a_lease_from_before_start_times_is_still_read(tmp_path: Path) -> None:
    """``<pid>:<nonce>`` leases written by older paxm: a dead pid is recovered, a live one kept."""
    path = tmp_path / "queue.sqlite"
    with CaptureQueue(path, routes={"default": ["sqlite"]}) as queue:
        queue.append_many([event("u1", "s1", "prompt"), event("a1", "s1", "answer", terminal=True)])
        queue.append_many([event("u2", "s2", "prompt 2"), event("a2", "s2", "answer 2", terminal=True)])
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with sqlite3.connect(path) as conn:
            rows = [r[0] for r in conn.execute("SELECT rowid FROM capture_deliveries ORDER BY rowid")]
            conn.execute(
                "UPDATE capture_deliveries SET state = 'delivering', lease_owner = ? WHERE rowid = ?",
                (f"{int(gone.stdout)}:abcdef", rows[0]),
            )
            conn.execute(
                "UPDATE capture_deliveries SET state = 'delivering', lease_owner = ? WHERE rowid = ?",
                (f"{live.pid}:123456", rows[1]),
            )
        with CaptureQueue(path, routes={"default": ["sqlite"]}):
            pass
        with sqlite3.connect(path) as conn:
            states = [r[0] for r in conn.execute("SELECT state FROM capture_deliveries ORDER BY rowid")]
        assert states == ["retry", "delivering"]
    finally:
        live.kill()
        live.wait()
