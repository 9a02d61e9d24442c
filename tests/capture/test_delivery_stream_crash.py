"""SIGKILL a worker delivering batches (claim, write, record, repeat), then resume.

Where each kill lands is chosen by the test and reached by the child's own progress, never by
the wall clock (on a loaded machine a worker's start-up alone outlasts any fixed delay): every
run first writes one or two batches that the queue records, then is killed

* ``write``: inside the next batch's write, before the provider commits (that batch, and only
  it, leased: checked in the queue);
* ``stored``: after the provider committed that write, before the queue recorded it (the
  batch must be re-sent, idempotently);
* ``free``: at a random moment after that write started (inside a write, a claim or the
  record of a batch); the child stalls one batch later, so no run runs away.

Every run makes progress, so no delivery collects interrupted attempts until it is given up.
After the last run: every episode is stored exactly once under its stable id, and in every
session the first write of each episode follows the first write of the one before it
(no later episode overtakes).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path

import pytest
from _capture_helpers import start_fork_server

WORKER = Path(__file__).with_name("_delivery_stream_crash_worker.py")
KILLS = 40
EPISODES = 600  # _delivery_stream_crash_worker.EPISODES
WRITE_TIME = 0.08  # _delivery_stream_crash_worker.WRITE_TIME
#: a generous bound for a condition to come true on a loaded machine; a failure, not a pace
PATIENCE = 120.0


class ForkServer:
    """The fork server's stdout: ``pid N``, ``exit STATUS`` and the child's own lines."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.pid = 0
        self.put_size = 0  # the size of the batch whose write started last

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def next(self) -> list[str]:
        assert self.proc.stdout is not None
        words = self.proc.stdout.readline().split()
        assert words, "fork server ended"
        if words[0] == "pid":
            self.pid = int(words[1])
        elif words[0] == "put":
            self.put_size = int(words[2])
        assert words[0] != "exit", f"worker ended on its own: {words}"
        return words

    def wait_for(self, *prefixes: str) -> list[str]:
        """Read up to the first line starting with one of ``prefixes`` and, too, the child's pid."""
        while True:
            words = self.next()
            if " ".join(words).startswith(prefixes):
                while not self.pid:
                    self.next()
                return words

    def exit_status(self) -> int:
        assert self.proc.stdout is not None
        while (words := self.proc.stdout.readline().split()) and words[0] != "exit":
            pass
        assert words, "fork server ended"
        self.pid = 0
        return int(words[1])

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        status = self.exit_status()
        assert os.WIFSIGNALED(status), f"worker ended on its own: {status}"


def _delivered(path: Path) -> int:
    try:
        with closing(sqlite3.connect(path)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM items").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _leased(queue_path: Path) -> int:
    """Deliveries leased right now (the worker is stalled inside a write)."""
    with closing(sqlite3.connect(queue_path, timeout=30)) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM capture_deliveries WHERE state = 'delivering'").fetchone()[0])


@pytest.mark.slow
def test_sigkill_during_batched_delivery_loses_nothing_and_keeps_order(tmp_path: Path) -> None:
    queue_path = tmp_path / "capture.sqlite"
    provider_path = tmp_path / "provider.sqlite"
    rng = random.Random(23)
    proc = start_fork_server(WORKER, queue_path, provider_path)
    server = ForkServer(proc)
    kills = {"write": 0, "stored": 0, "free": 0}
    midway = 0
    try:
        assert server.next() == ["ready"]
        for _ in range(KILLS):
            kind = rng.choice(("write", "stored", "free"))
            recorded = rng.randint(1, 2)  # batches written and recorded before the kill point
            if kind == "free":
                server.send(f"run {recorded + 2} write")
                words = server.wait_for(f"put {recorded + 1} ", "idle")
                if words[0] != "idle":
                    time.sleep(rng.uniform(0, 2 * WRITE_TIME))
            else:
                server.send(f"run {recorded + 1} {kind}")
                words = server.wait_for("stall", "idle")
            if words[0] == "idle":  # everything is delivered: no kill lands mid-delivery any more
                server.kill()
                break
            if kind == "write":  # nothing is claimed ahead of the batch being written
                assert _leased(queue_path) == server.put_size
            server.kill()
            kills[kind] += 1
            if 0 < _delivered(provider_path) < EPISODES:
                midway += 1
        server.send("flush")
        final = server.exit_status()
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    assert os.WIFEXITED(final) and os.WEXITSTATUS(final) == 0, "final flush left work undelivered"
    # every run recorded at most three batches, so a dozen kills land mid-delivery whatever the load
    assert midway >= 10, f"only {midway} kills landed mid-delivery"
    assert kills["write"] and kills["stored"] and kills["free"], kills

    with sqlite3.connect(queue_path) as conn:
        episodes = dict(conn.execute("SELECT episode_id, session_key FROM capture_episodes").fetchall())
        states = dict(conn.execute("SELECT state, COUNT(*) FROM capture_deliveries GROUP BY state").fetchall())
    with sqlite3.connect(provider_path) as conn:
        stored = conn.execute("SELECT id, text FROM items").fetchall()
        writes = conn.execute("SELECT id, text FROM writes ORDER BY n").fetchall()
    # nothing lost, nothing duplicated: one queue episode per logical episode, stored once
    assert len(episodes) == EPISODES and states == {"delivered": EPISODES}
    assert sorted(i for i, _ in stored) == sorted(episodes)
    logical = sorted(text.split("\n\n")[0] for _, text in stored)
    assert len(set(logical)) == EPISODES
    # order per session: first writes come in position order (re-sends after kills may repeat)
    first: dict[str, list[int]] = {}
    seen: set[str] = set()
    for item_id, text in writes:
        if item_id in seen:
            continue
        seen.add(item_id)
        session, position = text.split()[:2]
        first.setdefault(session, []).append(int(position))
    for session, positions in first.items():
        assert positions == sorted(positions), f"{session} delivered out of order"
    resent = len(writes) - len(stored)
    # a batch the provider stored but the queue never recorded is written again after the kill
    assert resent >= kills["stored"]
    print(
        f"\nbatched delivery crash test: {sum(kills.values())} SIGKILLs {kills} ({midway} mid-delivery);"
        f" {resent} idempotent re-sends"
    )
