"""SIGKILL a real delivering worker process 200+ times; nothing is lost, nothing duplicated."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from _capture_helpers import start_fork_server

WORKER = Path(__file__).with_name("_crash_worker.py")
KILLS = 200
MIN_EPISODES = 50


def _line(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line.startswith(prefix), f"unexpected fork-server output {line!r}"
    return line[len(prefix) :].strip()


def _appended(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM capture_events").fetchone()[0])
    except sqlite3.OperationalError:  # killed before the schema existed
        return 0
    finally:
        conn.close()


@pytest.mark.slow
def test_sigkill_loop_delivers_every_episode_exactly_once(tmp_path: Path) -> None:
    queue_path = tmp_path / "hooks" / "capture.sqlite"
    provider_path = tmp_path / "provider.sqlite"
    rng = random.Random(5)
    server = start_fork_server(WORKER, queue_path, provider_path)
    assert server.stdin is not None
    killed = 0
    started = time.monotonic()
    try:
        _line(server, "ready")
        for _ in range(KILLS):
            server.stdin.write("run\n")
            server.stdin.flush()
            pid = int(_line(server, "pid"))
            time.sleep(rng.uniform(0.0, 0.15))
            os.kill(pid, signal.SIGKILL)
            status = int(_line(server, "exit"))
            assert os.WIFSIGNALED(status), f"worker ended on its own: {status}"
            killed += 1
        server.stdin.write("flush\n")
        server.stdin.flush()
        _line(server, "pid")
        final = int(_line(server, "exit"))
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        assert server.stdout is not None
        server.stdout.close()
    elapsed = time.monotonic() - started
    assert killed >= 200
    assert os.WIFEXITED(final) and os.WEXITSTATUS(final) == 0, "final flush left work undelivered"

    events = _appended(queue_path)
    assert events % 3 == 0, "the final run must complete the interrupted episode"
    streamed = events // 3  # how far the stream got across all kills
    assert streamed >= MIN_EPISODES, f"only {streamed} episodes streamed: the kills left no time to work"
    with sqlite3.connect(queue_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM capture_events WHERE episode_id = ''").fetchone()[0] == 0
        episodes = dict(conn.execute("SELECT episode_id, state FROM capture_episodes").fetchall())
        deliveries = conn.execute("SELECT episode_id, state, provider_ref FROM capture_deliveries").fetchall()
        attempts = sum(r[0] for r in conn.execute("SELECT attempts FROM capture_deliveries"))
    with sqlite3.connect(provider_path) as conn:
        stored = conn.execute("SELECT id, text, puts FROM items").fetchall()

    # each logical episode became exactly one queue episode, delivered once, none dead
    assert len(episodes) == streamed and set(episodes.values()) == {"delivered"}
    assert len(deliveries) == streamed and {d[1] for d in deliveries} == {"delivered"}
    assert sorted(d[2] for d in deliveries) == sorted(episodes)
    # the ID-honouring provider holds each episode exactly once, under its stable id
    assert sorted(r[0] for r in stored) == sorted(episodes)
    logical = sorted(int(text.split()[1]) for _, text, _ in stored)
    assert logical == list(range(streamed))
    for _, text, _ in stored:
        ep = text.split()[1]
        assert text == "\n\n".join(f"episode {ep} part {j}" for j in range(3))
    puts = sum(r[2] for r in stored)
    print(
        f"\ncrash test: {killed} SIGKILLs, all mid-stream, in {elapsed:.1f}s; "
        f"{streamed} episodes delivered once each; "
        f"{puts} provider puts ({puts - streamed} idempotent re-sends after kills), {attempts} attempts"
    )
