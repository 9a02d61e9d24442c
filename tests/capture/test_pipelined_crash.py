"""SIGKILL a worker delivering pipelined batches (the next claimed while one is written), then resume.

Every kill lands with up to two batches leased: one written or being written, the next
claimed behind it.  After the last run: every episode is stored exactly once under its
stable id, and in every session the first write of each episode follows the first write
of the one before it (pipelining never lets a later episode overtake).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("_pipelined_crash_worker.py")
KILLS = 40
EPISODES = 600  # _pipelined_crash_worker.EPISODES


def _line(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line.startswith(prefix), f"unexpected fork-server output {line!r}"
    return line[len(prefix) :].strip()


def _delivered(path: Path) -> int:
    try:
        with sqlite3.connect(path) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM items").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_sigkill_during_pipelined_delivery_loses_nothing_and_keeps_order(tmp_path: Path) -> None:
    queue_path = tmp_path / "capture.sqlite"
    provider_path = tmp_path / "provider.sqlite"
    rng = random.Random(23)
    server = subprocess.Popen(
        [sys.executable, str(WORKER), str(queue_path), str(provider_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None
    midway = 0
    try:
        _line(server, "ready")
        for _ in range(KILLS):
            server.stdin.write("run\n")
            server.stdin.flush()
            pid = int(_line(server, "pid"))
            time.sleep(rng.uniform(0.05, 0.4))
            os.kill(pid, signal.SIGKILL)
            status = int(_line(server, "exit"))
            assert os.WIFSIGNALED(status), f"worker ended on its own: {status}"
            if 0 < _delivered(provider_path) < EPISODES:
                midway += 1
        server.stdin.write("flush\n")
        server.stdin.flush()
        _line(server, "pid")
        final = int(_line(server, "exit"))
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        assert server.stdout is not None
        server.stdout.close()
    assert os.WIFEXITED(final) and os.WEXITSTATUS(final) == 0, "final flush left work undelivered"
    assert midway >= 10, "the kills never landed mid-delivery: deliver more episodes"

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
    print(f"\npipelined crash test: {KILLS} SIGKILLs ({midway} mid-delivery); {resent} idempotent re-sends")
